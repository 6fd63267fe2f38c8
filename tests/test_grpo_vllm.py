"""``grpo.backend: vllm``: the glue to vLLM's offline API, driven through the real CLI and GRPO loop.

vLLM needs a CUDA GPU and this machine has none, so the ``vllm`` module — and only it — is replaced by a stand-in
(``FakeVLLM``) that keeps vLLM's contract: ``LLM(...)`` over a local model directory; ``generate`` takes
``{"prompt": text with ONE <|image_pad|>, "multi_modal_data": {"image": PIL}}``, expands the placeholder from the
image grid with the real HF Qwen2-VL image processor, samples with the tiny model through transformers, and
returns ``RequestOutput``-shaped objects (``prompt_token_ids``, ``outputs[i].token_ids``, raw ``logprobs`` as
``{token: Logprob}``); ``SamplingParams`` accepts only vLLM's field names; the engine model's ``load_weights``
refuses names the checkpoint does not have. The renderer, rewards, loss, loop and CLI are the real ones.
``benchmarks/gpu_check.sh`` exercises the real vLLM on a GPU host.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from typing import ClassVar

import pytest
import torch
from tiny_model import write_dataset
from typer.testing import CliRunner

from pipelines.cli import app
from training.data import IMAGE_PAD, DataConfig, Renderer, ShardStream, shard_files
from training.metrics import read_metrics
from training.models import load_model_and_processor
from training.sampler import check_backend
from training.vllm_rollout import VLLMRollouts

runner = CliRunner()


@dataclasses.dataclass
class SamplingParams:  # vLLM's field names; a misspelt keyword fails here as it would in vLLM
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = 16
    logprobs: int | None = None
    stop_token_ids: list[int] | None = None
    skip_special_tokens: bool = True
    seed: int | None = None
    logit_bias: dict[int, float] | None = None


class EngineModel:
    def __init__(self, hf: torch.nn.Module):
        self.hf = hf
        self.params = dict(hf.named_parameters())
        self.loaded: list[str] = []

    def load_weights(self, weights) -> set[str]:
        done = set()
        for name, tensor in weights:
            if name not in self.params:
                raise KeyError(f"no parameter {name} in the engine's model")
            self.params[name].data.copy_(tensor)
            done.add(name)
        self.loaded += sorted(done)
        return done


class FakeLLM:
    instances: ClassVar[list[FakeLLM]] = []

    def __init__(self, model: str, tokenizer: str | None = None, dtype: str = "auto", seed: int = 0,
                 gpu_memory_utilization: float = 0.9, max_model_len: int | None = None, tensor_parallel_size: int = 1,
                 limit_mm_per_prompt: dict | None = None, mm_processor_kwargs: dict | None = None):
        self.hf, self.tok, self.ip = load_model_and_processor(model)
        self.hf.eval()
        self.mm = mm_processor_kwargs or {}
        self.calls: list[tuple[dict, SamplingParams]] = []
        self.cache_resets = 0
        self.engine_model = EngineModel(self.hf)
        worker = types.SimpleNamespace(model_runner=types.SimpleNamespace(model=self.engine_model))
        self.llm_engine = types.SimpleNamespace(model_executor=types.SimpleNamespace(driver_worker=worker))
        torch.manual_seed(seed)
        FakeLLM.instances.append(self)

    def reset_prefix_cache(self) -> None:
        self.cache_resets += 1

    @torch.no_grad()
    def generate(self, prompts: list[dict], sampling_params: SamplingParams, use_tqdm: bool = True):
        outs = []
        for req in prompts:
            self.calls.append((req, sampling_params))
            assert req["prompt"].count(IMAGE_PAD) == 1, "vLLM expects one image placeholder per image"
            px = self.ip(images=[req["multi_modal_data"]["image"]], return_tensors="pt",
                         size={"shortest_edge": self.mm["min_pixels"], "longest_edge": self.mm["max_pixels"]})
            n_img = int(px["image_grid_thw"][0].prod()) // (self.ip.merge_size**2)
            text = req["prompt"].replace(IMAGE_PAD, IMAGE_PAD * n_img)
            ids = torch.tensor([self.tok(text, add_special_tokens=False)["input_ids"]])
            sp = sampling_params
            gen = self.hf.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids),
                mm_token_type_ids=(ids == self.hf.config.image_token_id).long(), pixel_values=px["pixel_values"],
                image_grid_thw=px["image_grid_thw"], do_sample=True, temperature=sp.temperature, top_p=sp.top_p,
                suppress_tokens=[t for t, b in (sp.logit_bias or {}).items() if b <= -100],
                num_return_sequences=sp.n, max_new_tokens=sp.max_tokens, eos_token_id=sp.stop_token_ids,
                pad_token_id=self.tok.pad_token_id, output_logits=True, return_dict_in_generate=True)
            raw = torch.log_softmax(torch.stack(gen.logits, dim=1).float(), dim=-1)  # vLLM's default: raw logprobs
            seqs = []
            for i, row in enumerate(gen.sequences[:, ids.shape[1]:].tolist()):
                stop = next((j for j, t in enumerate(row) if t in sp.stop_token_ids), len(row) - 1)
                toks = row[: stop + 1]
                lps = [{t: types.SimpleNamespace(logprob=float(raw[i, j, t]), rank=1)} for j, t in enumerate(toks)]
                seqs.append(types.SimpleNamespace(token_ids=toks, logprobs=lps, text=self.tok.decode(toks)))
            outs.append(types.SimpleNamespace(prompt_token_ids=ids[0].tolist(), outputs=seqs))
        return outs


@pytest.fixture
def fake_vllm(monkeypatch):
    mod = types.ModuleType("vllm")
    mod.LLM, mod.SamplingParams = FakeLLM, SamplingParams
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    FakeLLM.instances.clear()
    return mod


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("grpo-vllm")
    res = runner.invoke(app, ["train", "make-tiny-model", "--out", str(root / "tiny")])
    assert res.exit_code == 0, res.output
    data, _ = write_dataset(root / "ds", n_traj=2, steps=3, files=1)
    return root, data


def test_grpo_with_the_vllm_backend_samples_through_llm_generate_and_syncs_weights(env, fake_vllm, tmp_path):
    root, data = env
    cfg = tmp_path / "grpo.yaml"
    # Weight decay moves every parameter each step even when all rewards tie, so the sync has something to carry.
    cfg.write_text("optim: {lr: 0.01, weight_decay: 0.5, batch_size: 2}\nrun: {save_every: 1000}\n"
                   "data: {max_pixels: 12544, min_pixels: 784}\n"
                   "grpo: {backend: vllm, num_generations: 4, max_new_tokens: 10, temperature: 1.0, "
                   "zero_variance: keep, reestimate_every: 100}\n")
    out = tmp_path / "run"
    res = runner.invoke(app, ["train", "grpo", "--config", str(cfg), "--data", str(data), "--model",
                              str(root / "tiny"), "--out", str(out), "--max-steps", "2", "--no-progress"])
    assert res.exit_code == 0, res.output
    (llm,) = FakeLLM.instances
    assert len(llm.calls) == 4  # 2 steps × 2 prompts, one generate call each
    for req, sp in llm.calls:
        assert (sp.n, sp.max_tokens, sp.logprobs, sp.temperature) == (4, 10, 0, 1.0)
        assert req["multi_modal_data"]["image"].size[0] % 28 == 0  # the renderer's resized screenshot
    ms = read_metrics(out)
    n_params = len(dict(llm.hf.named_parameters()))
    assert [m["weight_sync_tensors"] for m in ms] == [n_params, n_params]
    assert llm.cache_resets == 2
    # Step 2 sampled from the engine after step 1's sync: its log-probs equal the policy's own (same weights).
    assert ms[1]["sampler_logp_gap"] < 1e-4
    # After the last step the engine holds exactly the trained policy, which moved away from the start.
    final, _, _ = load_model_and_processor(out / "final")
    start, _, _ = load_model_and_processor(root / "tiny")
    fin, st = dict(final.named_parameters()), dict(start.named_parameters())
    for name, p in llm.hf.named_parameters():
        torch.testing.assert_close(p, fin[name])
    assert any(not torch.equal(fin[k], st[k]) for k in fin)

    # Resumed: a new engine starts from --model, so it must take the checkpoint's weights before sampling.
    res = runner.invoke(app, ["train", "grpo", "--config", str(cfg), "--data", str(data), "--model",
                              str(root / "tiny"), "--out", str(out), "--max-steps", "3", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert len(FakeLLM.instances) == 2
    assert read_metrics(out)[2]["step"] == 3 and read_metrics(out)[2]["sampler_logp_gap"] < 1e-4


def test_prompt_expansion_disagreement_is_a_clear_error(env, fake_vllm):
    root, data = env
    _, tok, ip = load_model_and_processor(root / "tiny")
    renderer = Renderer(tok, ip, "qwen2_vl", DataConfig(max_pixels=12544, min_pixels=784, mix="direct"))
    r = renderer.render(next(x for x in ShardStream(shard_files(data)) if hasattr(x, "image")))[0]
    llm = FakeLLM(str(root / "tiny"), mm_processor_kwargs={"min_pixels": 784, "max_pixels": 784 * 4})
    with pytest.raises(RuntimeError, match="image processor disagrees"):
        VLLMRollouts(llm, tok, renderer).generate(r, 2, 4, 1.0, 1.0, torch.device("cpu"))


def test_vllm_backend_without_vllm_is_refused_clearly(env, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm → ImportError, as on a host without it
    with pytest.raises(RuntimeError, match="vLLM is not installed"):
        check_backend("vllm")
    root, data = env
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("grpo: {backend: vllm}\n")
    res = runner.invoke(app, ["train", "grpo", "--config", str(cfg), "--data", str(data), "--model",
                              str(root / "tiny"), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 1 and "vLLM is not installed" in res.output
    assert not (tmp_path / "o" / "checkpoints").exists()


def test_engine_model_is_found_behind_the_v1_worker_wrapper():
    from training.vllm_rollout import engine_model

    model = object()
    wrapped = types.SimpleNamespace(model_runner=None, worker=types.SimpleNamespace(
        model_runner=types.SimpleNamespace(model=model)))
    llm = types.SimpleNamespace(llm_engine=types.SimpleNamespace(model_executor=types.SimpleNamespace(
        driver_worker=wrapped)))
    assert engine_model(llm) is model

