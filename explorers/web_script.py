"""The JavaScript injected into web pages: one call waits for the page to settle and extracts the screen.

Why one script: every WebDriver round trip costs milliseconds, and a crawl makes thousands. ``SETTLE_EXTRACT_JS``
is an asynchronous script that waits *inside the page* until it is quiet — document loaded, no DOM mutation for
a short window, no young fetch/XHR in flight, one animation frame rendered — and then returns the viewport, the
location and every visible element (rect, role, accessible name, text, state, the form it submits to). So an
observation after an action costs one script call plus one screenshot, where polling from Python costs a
round trip (and a sleep) per poll. ``EXTRACT_JS`` is the same extraction without the wait, ``SETTLE_JS`` the wait
without the extraction, and ``PROBE_JS`` the cheap probe the Python polling fallback reads.
"""

from __future__ import annotations

# Installed once per document (by whichever script runs first): a MutationObserver that counts mutations and
# remembers when the last one happened, and wrappers around fetch/XMLHttpRequest that track requests in flight.
_INSTALL = r"""
function __tfInstall() {
  if (window.__tfToken) return false;
  window.__tfToken = Math.random().toString(36).slice(2);
  window.__tfMut = 0;
  window.__tfLast = performance.now();
  window.__tfPend = {};
  window.__tfReqId = 0;
  try {
    new MutationObserver(function (m) { window.__tfMut += m.length; window.__tfLast = performance.now(); })
      .observe(document.documentElement, {subtree: true, childList: true, attributes: true, characterData: true});
  } catch (e) {}
  function begin() { const id = ++window.__tfReqId; window.__tfPend[id] = performance.now(); return id; }
  function end(id) { delete window.__tfPend[id]; window.__tfLast = performance.now(); }
  try {
    const f = window.fetch;
    if (typeof f === 'function') {
      window.fetch = function () {
        const id = begin();
        try {
          const p = f.apply(this, arguments);
          p.then(function () { end(id); }, function () { end(id); });
          return p;
        } catch (e) { end(id); throw e; }
      };
    }
  } catch (e) {}
  try {
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function () {
      const id = begin();
      this.addEventListener('loadend', function () { end(id); });
      try { return send.apply(this, arguments); } catch (e) { end(id); throw e; }
    };
  } catch (e) {}
  return true;
}
"""

# Returns {url, title, w, h, dpr, scrollY, scrollH, token, elements: [...]}; rects are CSS px in the viewport.
_EXTRACT = r"""
function __tfExtract(MAX) {
__tfInstall();
const w = window.innerWidth, h = window.innerHeight;
const INTERACTIVE = 'a[href],button,input,select,textarea,summary,[role=button],[role=link],[role=tab],' +
  '[role=checkbox],[role=radio],[role=menuitem],[role=option],[role=switch],[onclick],[contenteditable=true],' +
  '[tabindex]:not([tabindex="-1"])';
const TEXTY = 'h1,h2,h3,h4,h5,h6,p,li,label,legend,th,td,span,time,strong,em,div,img[alt]';
const IMPLICIT = {A: 'link', BUTTON: 'button', SELECT: 'combobox', TEXTAREA: 'textbox', SUMMARY: 'button',
  H1: 'heading', H2: 'heading', H3: 'heading', H4: 'heading', H5: 'heading', H6: 'heading', IMG: 'img',
  LI: 'listitem', P: 'paragraph', LABEL: 'label', LEGEND: 'legend', TIME: 'time', TH: 'columnheader',
  TD: 'cell', NAV: 'navigation', DIALOG: 'dialog'};
const INPUT_ROLES = {checkbox: 'checkbox', radio: 'radio', button: 'button', submit: 'button', reset: 'button',
  range: 'slider', search: 'searchbox', image: 'button'};
function roleOf(el) {
  const r = el.getAttribute('role');
  if (r) return r;
  if (el.tagName === 'INPUT') return INPUT_ROLES[(el.type || 'text').toLowerCase()] || 'textbox';
  return IMPLICIT[el.tagName] || '';
}
function clean(s, n) { return (s || '').replace(/\s+/g, ' ').trim().slice(0, n || 120); }
function ownText(el) {
  let t = '';
  for (const c of el.childNodes) if (c.nodeType === 3) t += c.nodeValue;
  return clean(t);
}
function nameOf(el) {
  const a = el.getAttribute('aria-label');
  if (a) return clean(a);
  const lb = el.getAttribute('aria-labelledby');
  if (lb) {
    const t = lb.split(/\s+/).map(function (id) {
      const x = document.getElementById(id); return x ? x.innerText : ''; });
    if (t.join('').trim()) return clean(t.join(' '));
  }
  if (el.labels && el.labels.length) return clean(el.labels[0].innerText);
  if (el.tagName === 'INPUT' && ['submit', 'button', 'reset'].includes(el.type)) return clean(el.value);
  if (el.tagName === 'IMG') return clean(el.alt);
  return clean(el.innerText || el.getAttribute('title') || el.getAttribute('placeholder') || '');
}
function pathOf(el) {
  const parts = [];
  for (let e = el; e && e.nodeType === 1 && e !== document.documentElement; e = e.parentElement) {
    let i = 1;
    for (let s = e.previousElementSibling; s; s = s.previousElementSibling) if (s.tagName === e.tagName) i++;
    parts.push(e.tagName.toLowerCase() + '[' + i + ']');
  }
  return parts.reverse().join('/');
}
function visibleRect(el) {
  const r = el.getBoundingClientRect();
  if (r.width < 2 || r.height < 2) return null;
  const x1 = Math.max(0, r.left), y1 = Math.max(0, r.top), x2 = Math.min(w, r.right), y2 = Math.min(h, r.bottom);
  if (x2 - x1 < 2 || y2 - y1 < 2) return null;
  const st = getComputedStyle(el);
  if (st.visibility === 'hidden' || st.display === 'none' || parseFloat(st.opacity) === 0) return null;
  return [x1, y1, x2, y2];
}
function hits(el, rc) {
  const cx = (rc[0] + rc[2]) / 2, cy = (rc[1] + rc[3]) / 2;
  const top = document.elementFromPoint(cx, cy);
  return !!top && (top === el || el.contains(top) || top.contains(el) && top.tagName === 'LABEL');
}
const seen = new Set(), out = [];
function add(el, interactive) {
  if (seen.has(el) || out.length >= MAX) return;
  seen.add(el);
  const rc = visibleRect(el);
  if (!rc) return;
  const tag = el.tagName, type = tag === 'INPUT' ? (el.type || 'text').toLowerCase() : '';
  const editable = (tag === 'INPUT' && !['checkbox', 'radio', 'submit', 'button', 'reset', 'image', 'hidden',
    'file', 'range', 'color'].includes(type)) || tag === 'TEXTAREA' || el.isContentEditable;
  const text = interactive ? nameOf(el) : ownText(el) || (tag === 'IMG' ? clean(el.alt) : '');
  if (!interactive && !text) return;
  const form = el.form || el.closest('form');
  const st = getComputedStyle(el);
  out.push({
    tag: tag.toLowerCase(), type: type, role: roleOf(el), text: text,
    desc: clean(el.getAttribute('aria-description') || el.getAttribute('title') || ''),
    rid: el.getAttribute('data-testid') || el.id || el.getAttribute('name') || '',
    path: pathOf(el), rect: rc,
    clickable: interactive && !editable, editable: !!editable,
    checkable: type === 'checkbox' || type === 'radio' ||
      ['checkbox', 'radio', 'switch'].includes(el.getAttribute('role')),
    checked: !!el.checked || el.getAttribute('aria-checked') === 'true',
    enabled: !el.disabled && el.getAttribute('aria-disabled') !== 'true',
    visible: hits(el, rc),
    scrollable: (st.overflowY === 'auto' || st.overflowY === 'scroll') && el.scrollHeight > el.clientHeight + 4,
    href: tag === 'A' ? el.href : '',
    form_action: form ? (form.getAttribute('action') ? form.action : location.href) : '',
    form_method: form ? (form.method || 'get').toLowerCase() : '',
    input_name: el.getAttribute('name') || '', autocomplete: el.getAttribute('autocomplete') || '',
    required: !!el.required, value: editable ? clean(el.value, 60) : '',
    options: tag === 'SELECT' ? Array.from(el.options).map(function (o) { return o.value; }).slice(0, 20) : [],
    dialog: !!el.closest('[role=dialog],dialog'),
  });
}
document.querySelectorAll(INTERACTIVE).forEach(function (el) { add(el, true); });
document.querySelectorAll(TEXTY).forEach(function (el) { add(el, false); });
const se = document.scrollingElement || document.documentElement;
return {url: location.href, title: document.title, w: w, h: h, dpr: window.devicePixelRatio || 1,
  scrollY: se.scrollTop, scrollH: se.scrollHeight, token: window.__tfToken, ready: document.readyState,
  elements: out};
}
"""

# Waits inside the page, then calls ``done`` with {stable, waited, ...}. Quiet means: the document has loaded,
# no DOM mutation and no request finished for ``quietMs`` (counted from the script's start too, so a reaction
# scheduled just after the action is still awaited), no fetch/XHR younger than ``staleMs`` in flight (older ones
# are long polls that never end), no finite CSS animation/transition running (infinite ones are spinners and
# never end either), and one animation frame rendered (or 100 ms passed where frames are throttled).
# ``timeoutMs`` bounds it all: a page that never quiets is captured as it is.
_SETTLE = r"""
function __tfSettle(quietMs, timeoutMs, staleMs, done) {
  const fresh = __tfInstall();
  const t0 = performance.now();
  let framed = false;
  try { requestAnimationFrame(function () { framed = true; }); } catch (e) { framed = true; }
  function pending(now) {
    let n = 0;
    for (const id in window.__tfPend) if (now - window.__tfPend[id] < staleMs) n++;
    return n;
  }
  function animating() {
    if (!document.getAnimations) return 0;
    let n = 0;
    try {
      for (const a of document.getAnimations()) {
        if (a.playState !== 'running') continue;
        const it = a.effect && a.effect.getTiming ? a.effect.getTiming().iterations : 1;
        if (it !== Infinity) n++;
      }
    } catch (e) {}
    return n;
  }
  // An animation's end is itself an event: transitionend / animationend handlers run a frame after the
  // animation stops, so the quiet window restarts when the last running animation was seen.
  let lastAnim = t0;
  function check() {
    const now = performance.now();
    const anim = animating();
    if (anim) lastAnim = now;
    const ready = document.readyState === 'complete';
    const quiet = now - Math.max(window.__tfLast, t0, lastAnim) >= quietMs;
    const painted = framed || now - t0 >= 100;
    if (ready && quiet && painted && !pending(now) && !anim) {
      done({stable: true, waited: now - t0, fresh: fresh});
      return;
    }
    if (now - t0 >= timeoutMs) {
      done({stable: false, waited: now - t0, fresh: fresh, ready: document.readyState, quiet: quiet,
            pending: pending(now), animating: animating()});
      return;
    }
    setTimeout(check, 8);
  }
  check();
}
"""

# The extraction alone (no waiting): returns the screen now.
EXTRACT_JS = _INSTALL + _EXTRACT + "return __tfExtract(arguments[0]);"

# Asynchronous: wait until quiet (arguments: quiet ms, timeout ms, stale-request ms), return the settle status.
SETTLE_JS = _INSTALL + _SETTLE + """
const done = arguments[arguments.length - 1];
__tfSettle(arguments[0], arguments[1], arguments[2], done);
"""

# Asynchronous: wait until quiet, then extract, in one round trip: {settle: {...}, screen: {...}}.
SETTLE_EXTRACT_JS = _INSTALL + _EXTRACT + _SETTLE + """
const done = arguments[arguments.length - 1];
const MAX = arguments[3];
__tfSettle(arguments[0], arguments[1], arguments[2], function (st) {
  let screen = null, error = '';
  try { screen = __tfExtract(MAX); } catch (e) { error = String(e); }
  done({settle: st, screen: screen, error: error});
});
"""

# The polling fallback's probe: page instance, readiness, DOM mutation count and scroll position.
PROBE_JS = _INSTALL + """
if (__tfInstall()) return [window.__tfToken, document.readyState, -1, 0];
const se = document.scrollingElement || document.documentElement;
return [window.__tfToken, document.readyState, window.__tfMut, se.scrollTop];
"""
