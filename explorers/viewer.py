"""A self-contained HTML view of a crawled graph a person can read: screens as cards, actions as arrows.

DroidBot's utg.js needs a folder of screenshots and a vis.js download; this page is one file (thumbnails are
inlined as JPEG data URLs, layout is computed here) so it can be mailed, attached to a CI run or opened
offline. Screens are laid out in layers by BFS depth from the entry, each layer ordered after the screens that
lead to it (fewer crossings); a card is as tall as its screenshot and captioned with the screen's name. All
actions between two screens are one arrow (thicker for more; hover it for the actions). Clicking a screen shows
its heading, URL, the actions tried there with where each led, and its audit entries (refused actions, errors,
unreadable elements, dialogs, actions that ran new app code), and highlights its edges (out in orange, in in
blue); the search box dims every screen whose heading, title or URL does not match.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from PIL import Image

from graph.paths import breadth_first
from graph.user_screens import screen_name, site_titles
from schemas import BlobStore

THUMB_W = 150
COL_W = 230  # layer spacing: a card plus room for the arrows between layers
GAP = 26  # between cards of one layer
LABEL_H = 34  # the card's caption under its thumbnail
MAX_THUMB_H = 300
AUDIT_KINDS = ("blocked", "error", "skipped-elements", "dialog", "open")  # per-screen audit entries shown


def _thumb(blobs: BlobStore, sha: str) -> tuple[str, int]:
    """(JPEG data URL, thumbnail height) — the card is as tall as its screenshot, so the picture fills it."""
    try:
        with Image.open(io.BytesIO(blobs.get(sha, verify=False))) as shot:
            img = shot.convert("RGB")
            img.thumbnail((THUMB_W, MAX_THUMB_H))
            buf = io.BytesIO()
            img.save(buf, "JPEG", quality=70)
            height = img.height
        return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode(), height
    except Exception:
        return "", 90


def _element_labels(app_dir: Path, observation_ids: set[str]
                    ) -> tuple[dict[tuple[str, str], str], dict[str, list[dict[str, Any]]]]:
    """(observation, element) → the element's visible label, and observation → its elements."""
    path = app_dir / "observations.parquet"
    if not path.exists():
        return {}, {}
    labels: dict[tuple[str, str], str] = {}
    elements_of: dict[str, list[dict[str, Any]]] = {}
    for o in pq.read_table(path, columns=["id", "elements"]).to_pylist():
        if o["id"] not in observation_ids:
            continue
        elements = o["elements"] or []
        elements_of[o["id"]] = elements
        for e in elements:
            text = (e.get("text") or e.get("content_desc") or e.get("resource_id") or "").strip()
            if text:
                labels[(o["id"], e["id"])] = " ".join(text.split())[:40]
    return labels, elements_of


def _action_label(t: dict[str, Any], labels: dict[tuple[str, str], str]) -> str:
    """What a person would call the action: "click 'Settings'", "type 'Weekly team sync' into 'Title'"."""
    a = t["action"]
    kind = a["type"]
    target = labels.get((t["from_observation_id"], a.get("target_element_id") or ""), "")
    if a.get("text") and kind in ("type", "select"):
        return f"{kind} '{a['text'][:30]}'" + (f" into '{target}'" if target else "")
    if a.get("direction"):
        return f"{kind} {a['direction']}"
    return f"{kind} '{target}'" if target else kind


def _audit(app_dir: Path, alias_of: dict[str, str]) -> dict[str, list[str]]:
    """Per state, the audit entries a reviewer asks about: refused actions, errors, unreadable elements, dialogs,
    and on coverage crawls the actions that made the app run code no earlier action had (``js-new-code``, written
    after each action: it names the action taken just before it in the same worker's log)."""
    out: dict[str, list[str]] = defaultdict(list)
    for f in sorted((app_dir / "audit").glob("*.jsonl")):
        last_act = ""
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            decision = rec.get("decision")
            if decision == "act":
                last_act = str(rec.get("action") or "")
            sid = alias_of.get(str(rec.get("state") or ""))
            if sid is None:
                continue
            if decision == "js-new-code":
                chars = rec.get("chars")
                if not isinstance(chars, int) or chars <= 0:
                    continue
                what = f"new code: {chars} characters of the app's scripts first ran after {last_act or 'landing'}"
            elif decision in AUDIT_KINDS:
                what = f"{decision}: {rec.get('action') or rec.get('url') or ''} — {rec.get('reason', '')}"
            else:
                continue
            if what not in out[sid]:
                out[sid].append(what[:200])
    return out


def _layers(nodes: list[dict[str, Any]], adj: dict[str, set[str]]) -> dict[str, int]:
    """Depth of every state from the entry (BFS), each further disconnected part starting one layer deeper."""
    depth: dict[str, int] = {}
    for n in nodes:  # discovery order: the first state is where the crawl started
        if n["state_id"] in depth:
            continue
        base = 0 if not depth else max(depth.values()) + 1
        part = breadth_first([n["state_id"]], lambda cur: ((None, nxt) for nxt in sorted(adj[cur])),
                             admit=lambda _e, _n: True, skip=depth.__contains__)
        depth.update({state: base + hop.dist for state, hop in part.items()})
    return depth


def render_html(app_dir: Path, blobs: BlobStore, max_states: int = 400) -> str:
    nodes = pq.read_table(app_dir / "nodes.parquet").to_pylist()
    trans = pq.read_table(app_dir / "transitions.parquet").to_pylist()
    nodes.sort(key=lambda n: n["first_seen"])
    nodes = nodes[:max_states]
    ids = {n["state_id"] for n in nodes}
    labels, elements_of = _element_labels(app_dir, {t["from_observation_id"] for t in trans}
                                       | {n["observation_id"] for n in nodes})
    # Captioned with the screen's name (``graph.user_screens.screen_name``): the main content's heading, never the
    # navigation's, a user menu's or the app's own title (a heading or title part on nearly every screen).
    site = site_titles((elements_of.get(n["observation_id"], []), n["title"] or "", n["location"]) for n in nodes)
    names = {n["state_id"]: screen_name(elements_of.get(n["observation_id"], []), n["title"] or "", site)
             or n["title"] or n["location"] for n in nodes}
    # Edges bundled per screen pair: one arrow however many actions led from one screen to the other.
    edges: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    tried: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)  # state -> (action, destination) -> times
    for t in trans:
        if t["from_state"] not in ids:
            continue
        label = _action_label(t, labels)
        dest = t["to_state"]
        tried[t["from_state"]][(label, "(same screen)" if dest == t["from_state"] else
                                f"{names.get(dest, 'another screen')[:40]} [{dest[:8]}]")] += 1
        if dest in ids and t["from_state"] != dest:
            edges[(t["from_state"], dest)][label] += 1
    adj: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        adj[a].add(b)
    depth = _layers(nodes, adj)
    thumbs = {n["state_id"]: _thumb(blobs, n["screenshot_sha256"]) for n in nodes}
    # Within a layer, screens follow the order of the screens that lead to them (fewer crossing arrows).
    layers: dict[int, list[str]] = defaultdict(list)
    for n in nodes:
        layers[depth[n["state_id"]]].append(n["state_id"])
    rank: dict[str, float] = {}
    parents: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        parents[b].append(a)
    pos: dict[str, tuple[int, int]] = {}
    heights: dict[int, int] = {}
    for d in sorted(layers):
        order = layers[d]
        if d > 0:
            def bary(sid: str, order: list[str] = order, d: int = d) -> float:
                ranks = [rank[p] for p in parents[sid] if p in rank and depth[p] < d]
                return sum(ranks) / len(ranks) if ranks else float(len(order))
            order = sorted(order, key=bary)
        y = 20
        for i, sid in enumerate(order):
            rank[sid] = i
            pos[sid] = (20 + d * COL_W, y)
            y += thumbs[sid][1] + LABEL_H + GAP
        heights[d] = y
    width = 40 + (max(depth.values(), default=0) + 1) * COL_W
    height = 20 + max(heights.values(), default=1)
    card_h = {sid: thumbs[sid][1] + LABEL_H for sid in pos}
    svg = ['<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="context-stroke"/></marker></defs>']
    for (a, b), acts in edges.items():
        (x1, y1), (x2, y2) = pos[a], pos[b]
        n_acts = sum(acts.values())
        title = html.escape(f"{n_acts} action(s): " + ", ".join(sorted(acts))[:300])
        # Forward edges leave a screen's right side for the next layer's left side; edges back to an earlier
        # (or the same) layer leave and enter on the left, so the two directions do not overlap.
        sx = x1 + THUMB_W if x2 > x1 else x1
        sy, ty = y1 + card_h[a] * 0.45, y2 + card_h[b] * 0.55
        stroke = min(1.0 + 0.5 * (n_acts - 1), 4.0)
        svg.append(f'<line x1="{sx}" y1="{sy:.0f}" x2="{x2}" y2="{ty:.0f}" class="e" marker-end="url(#arrow)" '
                   f'style="stroke-width:{stroke:.1f}" data-from="{html.escape(a)}" data-to="{html.escape(b)}">'
                   f'<title>{title}</title></line>')
    alias_of = {alias: n["state_id"] for n in nodes for alias in [n["state_id"], *(n["aliases"] or [])]}
    audit = _audit(app_dir, alias_of)
    info = {}
    missing = 0
    for n in nodes:
        x, y = pos[n["state_id"]]
        sid = html.escape(n["state_id"])
        src, th = thumbs[n["state_id"]]
        missing += not src
        label = html.escape(names[n["state_id"]][:30])
        needle = html.escape(f"{names[n['state_id']]} {n['title'] or ''} {n['location']}".lower())
        svg.append(f'<g class="n" data-id="{sid}" data-text="{needle}" transform="translate({x},{y})">'
                   f'<rect width="{THUMB_W + 4}" height="{th + LABEL_H - 6}" x="-2" y="-2" rx="4"/>'
                   + (f'<image href="{src}" width="{THUMB_W}" height="{th}"/>'
                      if src else '<text y="40" x="8" class="miss">screenshot missing</text>') +
                   f'<text y="{th + 16}" x="2">{label}</text>'
                   f'<text y="{th + 28}" x="2" class="sub">depth {depth[n["state_id"]]} · '
                   f'{n["n_tried"]}/{n["n_offered"]} tried</text></g>')
        done = sorted(tried[n["state_id"]].items(), key=lambda kv: (-kv[1], kv[0]))
        info[n["state_id"]] = {"name": names[n["state_id"]], "location": n["location"], "title": n["title"],
                               "visits": n["visits"], "tried": n["n_tried"], "offered": n["n_offered"],
                               "depth": depth[n["state_id"]], "workers": n["workers"],
                               "out": [[a, to, c] for (a, to), c in done[:80]],
                               "audit": audit.get(n["state_id"], [])[:40]}
    data = json.dumps(info, ensure_ascii=False).replace("</", "<\\/")
    warn = (f'<p class="miss">{missing} screenshot(s) not found in the blob store '
            f'{html.escape(str(blobs.root))}: is --blob-root right?</p>') if missing else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>UI transition graph · {html.escape(app_dir.name)}
</title><style>
body{{font:13px system-ui,sans-serif;margin:0;display:flex;height:100vh}}
#g{{flex:1;overflow:auto}} #side{{width:380px;border-left:1px solid #ccc;padding:10px;overflow:auto}}
.e{{stroke:#8aa;stroke-width:1.2;opacity:.6}} .n rect{{fill:#fff;stroke:#567}}
.e.out{{stroke:#e60;stroke-width:2.5;opacity:1}} .e.in{{stroke:#26c;stroke-width:2.5;opacity:1}}
.n:hover rect,.n.sel rect{{stroke:#e60;stroke-width:3}} .n.dim{{opacity:.15}}
.n{{cursor:pointer}} text{{font-size:11px}} .sub{{fill:#667;font-size:10px}}
h5{{margin:10px 0 4px}} .miss{{fill:#b00;color:#b00}} li{{margin:2px 0}}
#q{{width:100%;box-sizing:border-box}}
</style></head><body><div id="g"><svg width="{width}" height="{height}">{"".join(svg)}</svg></div>
<div id="side"><h3>{html.escape(app_dir.name)}</h3><p>{len(nodes)} states, {len(trans)} transitions,
{len(edges)} distinct edges. Click a screen.</p>{warn}
<input id="q" type="search" placeholder="search screens by heading, title or URL"><div id="d"></div></div>
<script>const INFO={data};
function esc(s){{return String(s).replace(/[&<>"]/g,c=>({{'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}})[c]);}}
document.getElementById('q').addEventListener('input',e=>{{const q=e.target.value.trim().toLowerCase();
document.querySelectorAll('.n').forEach(g=>g.classList.toggle('dim',!!q&&!g.dataset.text.includes(q)));}});
document.querySelectorAll('.n').forEach(g=>g.addEventListener('click',()=>{{const i=INFO[g.dataset.id];
document.querySelectorAll('.n.sel').forEach(n=>n.classList.remove('sel'));g.classList.add('sel');
document.querySelectorAll('.e').forEach(e=>{{e.classList.toggle('out',e.dataset.from===g.dataset.id);
e.classList.toggle('in',e.dataset.to===g.dataset.id);}});
document.getElementById('d').innerHTML='<h4>'+esc(i.name)+'</h4><p><code>'+esc(g.dataset.id)+'</code><br>'+
esc(i.title)+'<br>'+esc(i.location)+'</p><p>depth '+i.depth+' · visits '+i.visits+' · tried '+i.tried+'/'+
i.offered+' actions · '+esc(i.workers.join(', '))+'</p><h5>Actions tried, and where each led</h5><ul class="acts">'+
i.out.map(o=>'<li>'+esc(o[0])+' → '+esc(o[1])+(o[2]>1?' ×'+o[2]:'')+'</li>').join('')+'</ul>'+
(i.audit.length?'<h5>Audit</h5><ul class="audit">'+i.audit.map(a=>'<li>'+esc(a)+'</li>').join('')+'</ul>':'');}}));
</script></body></html>"""
