"""Run-config recipes, LR schedules against HF transformers' own, temperature-consistent log-probs and the
suppression of vision tokens in generation."""

from __future__ import annotations

import pytest
import torch
from tiny_model import tiny_model, write_dataset

from training.config import ConfigError, load_config
from training.data import DataConfig, Renderer, ShardStream, shard_files
from training.models import load_model_and_processor
from training.sampler import assemble, generate, prompt_ids, suppressed_ids, token_logps
from training.schedule import lr_factor, warmup_steps


def _cfg(tmp_path, text: str):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return load_config(p)


def test_recipes_fill_what_the_yaml_leaves_out(tmp_path):
    g = _cfg(tmp_path, "{}").grpo
    assert (g.recipe, g.loss_agg, g.clip_ratio_c, g.kl_estimator, g.kl_coef, g.sngs, g.top_p) == (
        "guilibra", "token-mean", 3.0, "low_var_kl", 0.001, True, 0.98)
    t = _cfg(tmp_path, "grpo: {recipe: trl}").grpo
    assert (t.loss_agg, t.clip_ratio_c, t.kl_estimator, t.kl_coef, t.sngs, t.top_p) == ("dapo", None, "k3", 0.0,
                                                                                          False, 1.0)
    mixed = _cfg(tmp_path, "grpo: {recipe: guilibra, loss_agg: bnpo, clip_ratio_c: null}").grpo
    assert (mixed.loss_agg, mixed.clip_ratio_c, mixed.kl_estimator) == ("bnpo", None, "low_var_kl")
    old = _cfg(tmp_path, "grpo: {clip_eps: 0.1}").grpo  # the older single-ε key sets both sides
    assert (old.clip_low, old.clip_high) == (0.1, 0.1)


@pytest.mark.parametrize("text,key", [("grpo: {loss_agg: mean}", "grpo.loss_agg"),
                                      ("grpo: {recipe: verl}", "grpo.recipe"),
                                      ("grpo: {clip_ratio_c: 0.5}", "grpo.clip_ratio_c"),
                                      ("grpo: {zero_variance: skip}", "grpo.zero_variance"),
                                      ("optim: {schedule: step}", "optim.schedule"),
                                      ("grpo: {reward: computerrl}", "grpo.progress_graph")])
def test_bad_choices_name_their_key(tmp_path, text, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        _cfg(tmp_path, text)


@pytest.mark.parametrize("name", ["cosine", "linear", "constant"])
def test_schedules_equal_hf_transformers(name):
    import transformers

    total, warm = 30, 4
    hf_fn = {"cosine": transformers.get_cosine_schedule_with_warmup,
             "linear": transformers.get_linear_schedule_with_warmup,
             "constant": transformers.get_constant_schedule_with_warmup}[name]
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    hf = hf_fn(opt, warm) if name == "constant" else hf_fn(opt, warm, total)
    ours = lr_factor(name, total, warm)
    for step in range(total + 1):
        assert ours(step) == pytest.approx(hf.lr_lambdas[0](step), abs=1e-12), step
    with_min = transformers.get_cosine_with_min_lr_schedule_with_warmup(opt, warm, total, min_lr_rate=0.1)
    assert [lr_factor("cosine", total, warm, 0.1)(s) for s in range(total)] == pytest.approx(
        [with_min.lr_lambdas[0](s) for s in range(total)])
    assert warmup_steps(1000, 0, 0.01) == 10 and warmup_steps(1000, 7, 0.5) == 7


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("sampler")
    model, tok, ip = load_model_and_processor(tiny_model(root))
    data, _ = write_dataset(root / "ds", n_traj=1, steps=2, files=1)
    r = Renderer(tok, ip, "qwen2_vl", DataConfig(mix="direct", max_pixels=12544, min_pixels=784))
    return model.eval(), tok, r, r.render(next(iter(ShardStream(shard_files(data)))))[0]


def test_log_probs_are_taken_at_the_sampling_temperature(tiny):
    model, tok, r, rendered = tiny
    ids = prompt_ids(tok, rendered, torch.device("cpu"))
    comp = torch.tensor([tok("<answer>{}</answer><|im_end|>", add_special_tokens=False)["input_ids"]])
    pv, thw = r.pixels(rendered.image)
    ro = assemble(tok, rendered, ids, comp, torch.ones_like(comp, dtype=torch.bool), pv, thw)
    with torch.no_grad():
        logits = model(input_ids=ro.input_ids, attention_mask=ro.attention_mask,
                       mm_token_type_ids=(ro.input_ids == model.config.image_token_id).long(),
                       pixel_values=pv, image_grid_thw=thw).logits[0, ro.prompt_len - 1 : -1]
        for tau in (1.0, 0.5, 1.7):
            # Independent: softmax of logits / τ, read at the sampled tokens.
            probs = torch.softmax(logits.double() / tau, dim=-1)
            want = torch.log(probs[torch.arange(comp.shape[1]), comp[0]])
            got = token_logps(model, ro, model.config.image_token_id, tau)[0].double()
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_generation_never_emits_vision_tokens(tiny):
    model, tok, r, rendered = tiny
    banned = suppressed_ids(tok)
    assert tok.convert_tokens_to_ids("<|image_pad|>") in banned and tok.convert_tokens_to_ids("<|im_end|>") \
        not in banned
    # Make the untrained model *want* the image token: without suppression it would be sampled at every step.
    image_id = tok.convert_tokens_to_ids("<|image_pad|>")
    with torch.no_grad():
        model.lm_head.weight[image_id] += 50 * model.lm_head.weight.abs().max()
    try:
        torch.manual_seed(0)
        ro = generate(model, tok, r, rendered, 4, 12, 1.0, 1.0, torch.device("cpu"))
        comp = ro.input_ids[:, ro.prompt_len:][ro.completion_mask.bool()]
        assert comp.numel() > 0 and not set(comp.tolist()) & set(banned)
        token_logps(model, ro, image_id)  # the forward pass that used to fail on a stray <|image_pad|>
        # And the defence in depth: a banned token from any backend ends the completion before it.
        a, b = tok("ab", add_special_tokens=False)["input_ids"][:1] * 2
        sneaky = torch.tensor([[a, image_id, b]])
        cut = assemble(tok, rendered, ro.input_ids[:1, :ro.prompt_len], sneaky, torch.ones_like(sneaky).bool(),
                       ro.pixel_values[: ro.pixel_values.shape[0] // 4], ro.image_grid_thw[:1])
        assert cut.completion_mask.tolist() == [[1, 0, 0]] and image_id not in cut.input_ids[0, cut.prompt_len:]
    finally:
        with torch.no_grad():
            model.lm_head.weight[image_id] -= 50 * model.lm_head.weight.abs().max()


@pytest.mark.parametrize("text,message", [
    ("grpo: {clip_low: '0.2'}", "grpo.clip_low: input should be a valid number"),  # a string is never a number
    ("optim: {lr: true}", "optim.lr: input should be a valid number"),
    ("run: {max_steps: 1.5}", "run.max_steps: input should be a valid integer"),
    ("grpo: {num_generations: '4'}", "grpo.num_generations: input should be a valid integer"),
    ("grpo: {clip_lo: 0.1}", "grpo.clip_lo: unknown key (known: "),
    ("colour: red", "colour: unknown key (known: data, grpo, optim, run)"),
    ("run: [1, 2]", "run: input should be an object"),
])
def test_type_errors_name_the_key_that_is_wrong(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        _cfg(tmp_path, text)
    assert str(err.value).startswith(message)


def test_yaml_values_keep_their_types(tmp_path):
    cfg = _cfg(tmp_path, "optim: {lr: 1}\ngrpo: {band: [0.2, 0.8], clip_ratio_c: null}\ndata: {mix: 0.25}")
    assert isinstance(cfg.optim.lr, float) and cfg.optim.lr == 1.0
    assert cfg.grpo.band == (0.2, 0.8) and cfg.grpo.clip_ratio_c is None and cfg.data.mix == 0.25
