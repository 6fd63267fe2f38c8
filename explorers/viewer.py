"""A self-contained HTML view of a crawled graph: screenshot thumbnails as nodes, actions as edges.

DroidBot's utg.js needs a folder of screenshots and a vis.js download; this page is one file (thumbnails are
inlined as JPEG data URLs, layout is computed here) so it can be mailed, attached to a CI run or opened
offline. Nodes are laid out in columns by BFS depth from the first state; edges are arrows (hover one for
its actions). Clicking a node lists its location, visits and outgoing actions and highlights its edges (out
in orange, in in blue); the filter box dims every screen whose title or URL does not match.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import defaultdict, deque
from pathlib import Path

import pyarrow.parquet as pq
from PIL import Image

from schemas import BlobStore

THUMB_W = 120
COL_W, ROW_H = 190, 230


def _thumb(blobs: BlobStore, sha: str) -> str:
    try:
        with Image.open(io.BytesIO(blobs.get(sha, verify=False))) as img:
            img = img.convert("RGB")
            img.thumbnail((THUMB_W, THUMB_W * 2))
            buf = io.BytesIO()
            img.save(buf, "JPEG", quality=70)
        return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()
    except Exception:
        return ""


def render_html(app_dir: Path, blobs: BlobStore, max_states: int = 400) -> str:
    nodes = pq.read_table(app_dir / "nodes.parquet").to_pylist()
    trans = pq.read_table(app_dir / "transitions.parquet").to_pylist()
    nodes.sort(key=lambda n: n["first_seen"])
    nodes = nodes[:max_states]
    ids = {n["state_id"] for n in nodes}
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for t in trans:
        if t["from_state"] in ids and t["to_state"] in ids and t["from_state"] != t["to_state"]:
            a = t["action"]
            label = a["type"] + (f" {a['text']}" if a.get("text") else "")
            edges[(t["from_state"], t["to_state"])].append(label)
    adj = defaultdict(set)
    for a, b in edges:
        adj[a].add(b)
    depth: dict[str, int] = {}
    for n in nodes:  # BFS from each not-yet-placed state in discovery order (covers disconnected parts)
        if n["state_id"] in depth:
            continue
        depth[n["state_id"]] = 0 if not depth else max(depth.values()) + 1
        q = deque([n["state_id"]])
        while q:
            cur = q.popleft()
            for nxt in sorted(adj[cur]):
                if nxt not in depth:
                    depth[nxt] = depth[cur] + 1
                    q.append(nxt)
    rows: dict[int, int] = defaultdict(int)
    pos = {}
    for n in nodes:
        d = depth[n["state_id"]]
        pos[n["state_id"]] = (20 + d * COL_W, 20 + rows[d] * ROW_H)
        rows[d] += 1
    width = 40 + (max(depth.values(), default=0) + 1) * COL_W
    height = 40 + max(rows.values(), default=1) * ROW_H
    svg = ['<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="context-stroke"/></marker></defs>']
    for (a, b), labels in edges.items():
        (x1, y1), (x2, y2) = pos[a], pos[b]
        title = html.escape(", ".join(sorted(set(labels)))[:200])
        # Forward edges leave a screen's right side for the next column's left side; edges back to an earlier
        # (or the same) column leave and enter on the left, so the two directions do not overlap.
        sx = x1 + THUMB_W if x2 > x1 else x1
        svg.append(f'<line x1="{sx}" y1="{y1 + 60}" x2="{x2}" y2="{y2 + 70}" class="e" marker-end="url(#arrow)" '
                   f'data-from="{html.escape(a)}" data-to="{html.escape(b)}"><title>{title}</title></line>')
    info = {}
    missing = 0
    for n in nodes:
        x, y = pos[n["state_id"]]
        sid = html.escape(n["state_id"])
        src = _thumb(blobs, n["screenshot_sha256"])
        missing += not src
        label = html.escape((n["title"] or n["location"])[:28])
        needle = html.escape(f"{n['title'] or ''} {n['location']}".lower())
        svg.append(f'<g class="n" data-id="{sid}" data-text="{needle}" transform="translate({x},{y})">'
                   f'<rect width="{THUMB_W + 4}" height="{ROW_H - 30}" x="-2" y="-2" rx="4"/>'
                   + (f'<image href="{src}" width="{THUMB_W}" height="{ROW_H - 60}" preserveAspectRatio="xMidYMin"/>'
                      if src else '<text y="80" x="8" class="miss">screenshot missing</text>') +
                   f'<text y="{ROW_H - 45}" x="2">{label}</text></g>')
        outs = sorted({f"{lab} → {b[:8]}" for (a, b), labs in edges.items() if a == n["state_id"] for lab in labs})
        info[n["state_id"]] = {"location": n["location"], "title": n["title"], "visits": n["visits"],
                               "tried": n["n_tried"], "offered": n["n_offered"], "aliases": n["aliases"],
                               "workers": n["workers"], "out": outs[:60]}
    data = json.dumps(info, ensure_ascii=False).replace("</", "<\\/")
    warn = (f'<p class="miss">{missing} screenshot(s) not found in the blob store '
            f'{html.escape(str(blobs.root))}: is --blob-root right?</p>') if missing else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>UI transition graph · {html.escape(app_dir.name)}
</title><style>
body{{font:13px system-ui,sans-serif;margin:0;display:flex;height:100vh}}
#g{{flex:1;overflow:auto}} #side{{width:340px;border-left:1px solid #ccc;padding:10px;overflow:auto}}
.e{{stroke:#8aa;stroke-width:1.2;opacity:.6}} .n rect{{fill:#fff;stroke:#567}}
.e.out{{stroke:#e60;stroke-width:2.5;opacity:1}} .e.in{{stroke:#26c;stroke-width:2.5;opacity:1}}
.n:hover rect,.n.sel rect{{stroke:#e60;stroke-width:3}} .n.dim{{opacity:.15}}
.n{{cursor:pointer}} text{{font-size:11px}} .miss{{fill:#b00;color:#b00}} li{{margin:2px 0}}
#q{{width:100%;box-sizing:border-box}}
</style></head><body><div id="g"><svg width="{width}" height="{height}">{"".join(svg)}</svg></div>
<div id="side"><h3>{html.escape(app_dir.name)}</h3><p>{len(nodes)} states, {len(trans)} transitions,
{len(edges)} distinct edges. Click a screen.</p>{warn}
<input id="q" type="search" placeholder="filter by title or URL"><div id="d"></div></div>
<script>const INFO={data};
function esc(s){{return String(s).replace(/[&<>"]/g,c=>({{'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}})[c]);}}
document.getElementById('q').addEventListener('input',e=>{{const q=e.target.value.trim().toLowerCase();
document.querySelectorAll('.n').forEach(g=>g.classList.toggle('dim',!!q&&!g.dataset.text.includes(q)));}});
document.querySelectorAll('.n').forEach(g=>g.addEventListener('click',()=>{{const i=INFO[g.dataset.id];
document.querySelectorAll('.n.sel').forEach(n=>n.classList.remove('sel'));g.classList.add('sel');
document.querySelectorAll('.e').forEach(e=>{{e.classList.toggle('out',e.dataset.from===g.dataset.id);
e.classList.toggle('in',e.dataset.to===g.dataset.id);}});
document.getElementById('d').innerHTML='<h4>'+esc(g.dataset.id)+'</h4><p>'+esc(i.title)+'<br>'+esc(i.location)+
'</p><p>visits '+i.visits+' · tried '+i.tried+'/'+i.offered+' actions · '+esc(i.workers.join(', '))+
'</p><ul>'+i.out.map(o=>'<li>'+esc(o)+'</li>').join('')+'</ul>';}}));</script></body></html>"""
