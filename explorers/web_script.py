"""The JavaScript injected into web pages: one call waits for the page to settle and extracts the screen.

Why one script: every WebDriver round trip costs milliseconds, and a crawl makes thousands. ``SETTLE_EXTRACT_JS``
is an asynchronous script that waits *inside the page* until it is quiet — document loaded, no DOM mutation for a
short window since the action, no young fetch/XHR in flight, one animation frame rendered — and then returns the
viewport, the location and every visible element (rect, role, accessible name, text, state, the form it submits
to). So an observation after an action costs one script call plus one screenshot, where polling from Python costs
a round trip (and a sleep) per poll. The window is counted from the action's input events as the page received
them, so the rest of the tap's round trip and the caller's bookkeeping count towards it: after most taps the page
has been quiet long enough when the script arrives. The extraction is taken at the wait's first look when the
page is already done with the action, and kept if nothing it reads has changed by the end of the window; so a step
pays the window and the extraction side by side, not one after the other. ``EXTRACT_JS`` is the same extraction
without the wait, ``SETTLE_JS`` the wait without the extraction, and ``PROBE_JS`` the cheap probe the Python
polling fallback reads.
"""

from __future__ import annotations

# Installed once per document (by whichever script runs first): a MutationObserver that counts mutations and
# remembers when the last one happened, wrappers around fetch/XMLHttpRequest that track requests in flight, and
# one around setTimeout that tracks the short timers an action starts.
RES_STALE_MS = 4000  # a script or stylesheet the page added and still loading after this is not awaited any more

_INSTALL = f"const __TF_RES_STALE_MS = {RES_STALE_MS};\n" + r"""
// Safe DOM access. A form exposes its controls as properties that override the built-in ones
// ([LegacyOverrideBuiltIns]): with <input name="action"> ``form.action`` is that input, with
// <button name="submit"> ``form.submit`` is the button, and ``form.getAttribute`` or ``form.parentElement`` can
// be shadowed the same way; ``document`` does the same for <form name="title">, <img name="querySelectorAll">.
// So every property and method is read through the getter / function found on the object's prototype chain
// (which named properties never reach), cached per prototype. ``__tfP(el, 'action')`` is the real ``action``;
// ``__tfM(el, 'getAttribute', 'x')`` the real call.
const __tfCache = new Map();
function __tfLookup(obj, name) {
  const proto = Object.getPrototypeOf(obj);
  let per = __tfCache.get(proto);
  if (!per) { per = new Map(); __tfCache.set(proto, per); }
  if (per.has(name)) return per.get(name);
  let found = null;
  for (let p = proto; p; p = Object.getPrototypeOf(p)) {
    const d = Object.getOwnPropertyDescriptor(p, name);
    if (d) { found = d; break; }
  }
  per.set(name, found);
  return found;
}
function __tfP(obj, name) {
  if (obj === null || obj === undefined) return undefined;
  const d = __tfLookup(obj, name);
  if (!d) return undefined;
  return d.get ? d.get.call(obj) : d.value;
}
function __tfM(obj, name) {
  const d = __tfLookup(obj, name);
  const fn = d && (d.value || (d.get && d.get.call(obj)));
  return fn.apply(obj, Array.prototype.slice.call(arguments, 2));
}
// When a document seen for the first time last did something observable: the end of its load event or the
// arrival of its latest resource, once it has loaded (what it did before this script came cannot be watched any
// more); now while it is still loading, or when its resource timing buffer is full (the newest arrivals are then
// the ones not listed).
function __tfLoadedAt() {
  const now = performance.now();
  try {
    if (__tfP(document, 'readyState') !== 'complete') return now;
    const nav = performance.getEntriesByType('navigation')[0];
    if (!nav || !(nav.loadEventEnd > 0)) return now;
    const res = performance.getEntriesByType('resource');
    if (res.length >= 250) return now;
    let last = nav.loadEventEnd;
    for (const e of res) last = Math.max(last, e.responseEnd);
    return Math.min(now, last);
  } catch (e) { return now; }
}
// Scripts and stylesheets added by the page and still loading (``watchLoad``), for at most ``staleMs``; entries
// that left the document or went stale are forgotten.
function __tfResPending(now, staleMs) {
  let n = 0;
  for (const id in window.__tfRes || {}) {
    const r = window.__tfRes[id];
    if (!r.n.isConnected || now - r.t >= staleMs) { delete window.__tfRes[id]; continue; }
    n++;
  }
  return n;
}
function __tfInstall() {
  if (window.__tfToken) return false;
  window.__tfToken = Math.random().toString(36).slice(2);
  window.__tfMut = 0;
  window.__tfLast = __tfLoadedAt();
  window.__tfPend = {};
  window.__tfRes = {};
  window.__tfReqId = 0;
  // A script or stylesheet the page adds is loading until its load/error event: a single-page app fetches the
  // code of the page a tap opened (a webpack chunk) this way, and draws the page once it has run. Nothing else
  // moves meanwhile — no fetch, no DOM change — so without this the quiet window passed and the screen was read
  // half-drawn (MLflow's "Experiments": the sidebar, no list). Never a long poll, so awaited longer than a request
  // (``__TF_RES_STALE_MS``). Only what a loader adds — to <head> or <body>, code the browser runs, a sheet it
  // applies, each node once: markup set by innerHTML lands deeper and its scripts never run nor report, and one
  // that never reports is dropped once it leaves the document or goes stale (``__tfResPending``).
  const JS_TYPE = /^(|module|(text|application)\/(x-)?(java|ecma)script)$/i;
  const watched = new WeakSet();
  function watchLoad(n) {
    if (!n || n.nodeType !== 1 || watched.has(n)) return;
    const parent = n.parentNode;
    if (parent !== __tfP(document, 'head') && parent !== __tfP(document, 'body')) return;
    const tag = n.tagName;
    const code = tag === 'SCRIPT' && n.src && !n.noModule && JS_TYPE.test(String(n.type || '').trim());
    const rel = String(n.rel || '');
    const sheet = tag === 'LINK' && n.href && !n.disabled && !/(^|\s)alternate(\s|$)/i.test(rel)
      && /(^|\s)(stylesheet|modulepreload)(\s|$)/i.test(rel);
    if (!code && !sheet) return;
    watched.add(n);
    const id = ++window.__tfReqId;
    window.__tfRes[id] = {t: performance.now(), n: n};
    const fin = function () { delete window.__tfRes[id]; window.__tfLast = performance.now(); };
    n.addEventListener('load', fin, {once: true});
    n.addEventListener('error', fin, {once: true});
  }
  try {
    new MutationObserver(function (m) {
      window.__tfMut += m.length; window.__tfLast = performance.now();
      try { for (const r of m) for (const n of r.addedNodes) watchLoad(n); } catch (e) {}
    })
      .observe(__tfP(document, 'documentElement'),
               {subtree: true, childList: true, attributes: true, characterData: true});
  } catch (e) {}
  // A document that is being left (a link followed, a form posted, a script assigning location) stays alive
  // and quiet until the next one's response arrives: it must not be captured as the action's result.
  // ``beforeunload`` fires synchronously when such a navigation starts, before the request is sent.
  window.__tfLeave = 0;
  try { addEventListener('beforeunload', function () { window.__tfLeave = performance.now(); }); } catch (e) {}
  // Back/forward to a page kept in the back-forward cache brings this very document back, flag included: it is
  // not being left any more (else every wait on it ran to its timeout), and it was just shown (DOM activity).
  try {
    addEventListener('pageshow', function (e) {
      if (e.persisted) { window.__tfLeave = 0; window.__tfLast = performance.now(); }
    });
  } catch (e) {}
  // Changes that reach the screen without a DOM mutation: scrolling, a resource (image, font) arriving, a field's
  // value edited, focus moving, the viewport resized, an animation starting or ending. They tell an extraction
  // taken early that it is out of date. Only scrolling also holds the wait, until its ``scrollend`` (a smooth or
  // inertial scroll ends; a lazy-loading page's image loads might not). Element events do not bubble to
  // ``window`` (``load`` never reaches it), so they are caught on ``document``.
  window.__tfEv = 0;
  window.__tfScroll = 0;
  window.__tfScrollEnd = 0;
  function seen() { window.__tfEv++; }
  try {
    for (const k of ['load', 'error', 'input', 'change', 'focusin', 'focusout', 'toggle',
                     'animationstart', 'animationend', 'transitionstart', 'transitionend']) {
      document.addEventListener(k, seen, true);
    }
    document.addEventListener('scroll', function () {
      window.__tfEv++; window.__tfLast = window.__tfScroll = performance.now(); }, true);
    document.addEventListener('scrollend', function () { window.__tfScrollEnd = performance.now(); }, true);
    addEventListener('resize', seen);
  } catch (e) {}
  // When the user's input last reached the page (trusted pointer, touch, key and wheel events only: a page's own
  // synthetic events are not an action), and when a frame was last rendered after it. The quiet window after an
  // action counts from the action itself, not from when the wait's script arrived: the tap's round trip and the
  // caller's bookkeeping already spent part of it, watched by the observers installed here.
  window.__tfAct = 0;
  window.__tfActFrame = 0;
  function acted(e) {
    if (!e.isTrusted) return;
    window.__tfAct = performance.now();
    try { requestAnimationFrame(function () { window.__tfActFrame = performance.now(); }); } catch (x) {}
  }
  try {
    for (const k of ['pointerdown', 'pointerup', 'mousedown', 'mouseup', 'click', 'touchstart', 'touchend',
                     'keydown', 'keyup', 'wheel']) {
      addEventListener(k, acted, {capture: true, passive: true});
    }
  } catch (e) {}
  window.__tfSettled = 0;
  // Timers an action starts: a debounced search box (docsify waits 100 ms after the last keystroke, TiddlyWiki
  // refreshes its search results 400 ms after typing) changes the screen a while after the input, with no DOM
  // mutation, request or animation in between; captured at the first quiet moment, the results would belong to
  // the next action's screen. A timer set within TIMER_AFTER_MS of the last trusted input (in its handler, or in
  // a callback that handler scheduled) with a delay of at most TIMER_MAX_MS is awaited until it has run. Timers
  // set later (a clock's next tick, a poll) are not: their chains would never let the page be quiet.
  window.__tfTimers = {};
  window.__tfST = window.setTimeout;
  try {
    const st = window.setTimeout, ct = window.clearTimeout;
    window.setTimeout = function (fn, delay) {
      const d = Number(delay) || 0, now = performance.now();
      if (typeof fn !== 'function' || d > 1000 || !(window.__tfAct > 0 && now - window.__tfAct < 60)) {
        return st.apply(window, arguments);
      }
      const args = Array.prototype.slice.call(arguments, 2);
      const id = st.call(window, function () {
        delete window.__tfTimers[id];
        window.__tfLast = performance.now();
        return fn.apply(this, args);
      }, d);
      window.__tfTimers[id] = now + d;
      return id;
    };
    window.clearTimeout = function (id) { delete window.__tfTimers[id]; return ct.apply(window, arguments); };
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
// Everything the screen's readers watch, as one value: equal before and after means nothing they can see changed.
function __tfMark() {
  return [window.__tfMut, window.__tfLast, window.__tfReqId, window.__tfEv, window.__tfLeave,
          location.href].join('|');
}
"""

# Returns {url, title, w, h, dpr, scrollY, scrollH, token, elements: [...]}; rects are CSS px in the viewport.
_EXTRACT = r"""
function __tfExtract(MAX) {
__tfInstall();
const P = __tfP, M = __tfM, doc = document;
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
const CONTROLS = {INPUT: 1, SELECT: 1, TEXTAREA: 1, BUTTON: 1};
function attr(el, n) { return M(el, 'getAttribute', n); }
function tagOf(el) { return String(P(el, 'tagName') || ''); }
function str(v) { return typeof v === 'string' ? v : ''; }
function typeOf(el) { return (str(P(el, 'type')) || 'text').toLowerCase(); }
function roleOf(el, tag) {
  const r = attr(el, 'role');
  if (r) return r;
  if (tag === 'INPUT') return INPUT_ROLES[typeOf(el)] || 'textbox';
  return IMPLICIT[tag] || '';
}
const TEXT_MAX = 400;  // a text block's characters (a paragraph an answer may quote); names stay at 120
function clean(s, n) { return str(s).replace(/\s+/g, ' ').trim().slice(0, n || 120); }
function ownText(el) {
  let t = '';
  for (const c of P(el, 'childNodes')) if (P(c, 'nodeType') === 3) t += P(c, 'nodeValue');
  return clean(t);
}
// Phrasing elements whose words are part of the text block around them.
const INLINE = {A: 1, ABBR: 1, B: 1, BDI: 1, BDO: 1, CITE: 1, CODE: 1, DATA: 1, DEL: 1, DFN: 1, EM: 1, FONT: 1,
  I: 1, INS: 1, KBD: 1, MARK: 1, Q: 1, S: 1, SAMP: 1, SMALL: 1, SPAN: 1, STRONG: 1, SUB: 1, SUP: 1, TIME: 1,
  TT: 1, U: 1, VAR: 1};
// A text block's words as a reader sees them: its own text with its visible inline children's (links, emphasis,
// code) in place, but not its block children's (each is an element of its own). Own text alone turns
// "Trac is a <a>minimalistic</a> approach" into "Trac is a approach", which answers nobody's question. A block
// without own text (a paragraph that only wraps a link) stays out, as before: the link is the element. A heading
// whose words sit in a span does not (Trac's ticket title <h1><span>…</span></h1>; without it the screen was named
// by the next heading down, "Description"); one that only wraps links stays out like the paragraph: a site's
// brand link in an <h1> ("#! money?" on every I Hate Money screen) names no screen, but a link that is the
// heading's own anchor on its page (``anchorHere``) does not count as one.
const PERMALINK = /^\s*[¶§#🔗]\s*$/u;
// A child the page draws apart from the words beside it starts a new word: its own box (inline-block, a flex item),
// a margin or padding on that side, or a generated mark (a breadcrumb's "›" drawn by ``::before``). Without it
// a header drawn as <h1>Household accounts 2024<strong>Income Statement</strong></h1>, the "›" and the gap drawn
// by CSS, read "Household accounts 2024Income Statement" and named every screen of the app that way.
function drawnApart(c, st, side) {
  // a box of its own (a flex or grid item is blockified); an inline-block only with room around it, so letters
  // set one per inline-block span still read as one word
  if (!st.display.startsWith('inline') && st.display !== 'contents') return true;
  const before = side === 'before';
  if (parseFloat(before ? st.marginLeft : st.marginRight) > 0) return true;
  if (parseFloat(before ? st.paddingLeft : st.paddingRight) > 0) return true;
  // a mark with something in it, drawn in the flow (an empty or absolutely placed one is a clearfix or an
  // underline, not a separator)
  const ps = getComputedStyle(c, '::' + side);
  const mark = ps.content;
  if (!mark || mark === 'none' || mark === 'normal' || mark === '""' || mark === "''") return false;
  return ps.position !== 'absolute' && ps.position !== 'fixed';
}
const HEADING_TAGS = {H1: 1, H2: 1, H3: 1, H4: 1, H5: 1, H6: 1};
// A link to a place on the page it is on: ``#section``, or a hash route's own page with a section
// (``#/trails/overview?id=trails`` on ``#/trails/overview``). Documentation sites wrap every heading's words in
// one, so a reader can copy the heading's address: those words are the heading's own, unlike a brand link that
// leads to the start page.
function anchorHere(a) {
  let u;
  try { u = new URL(str(P(a, 'href'))); } catch (e) { return false; }
  if (!u.hash || u.origin !== location.origin || u.pathname !== location.pathname
      || u.search !== location.search) return false;
  const route = function (h) { return h.replace(/^#!?/, '').split('?')[0]; };
  return !route(u.hash).includes('/') || route(u.hash) === route(location.hash);
}
function flowText(el) {
  const own = !!ownText(el);
  if (!own && !HEADING_TAGS[tagOf(el)]) return '';
  let t = '', unlinked = own;
  (function walk(n, inLink) {
    for (const c of P(n, 'childNodes')) {
      const type = P(c, 'nodeType');
      if (type === 3) {
        t += P(c, 'nodeValue');
        if (!inLink && str(P(c, 'nodeValue')).trim()) unlinked = true;
        continue;
      }
      if (type !== 1) continue;
      const tag = tagOf(c);
      if (tag === 'BR') { t += ' '; continue; }
      if (!INLINE[tag]) continue;
      const st = getComputedStyle(c);
      if (st.display === 'none' || st.visibility === 'hidden' || parseFloat(st.opacity) === 0) continue;
      // a heading's permalink mark ("Welcome to Trac ¶") is no part of its words
      if (tag === 'A' && PERMALINK.test(str(P(c, 'textContent')))) continue;
      if (t && !/\s$/.test(t) && drawnApart(c, st, 'before')) t += ' ';
      walk(c, inLink || (tag === 'A' && !anchorHere(c)));
      if (drawnApart(c, st, 'after')) t += ' ';
    }
  })(el, false);
  if (!unlinked) return '';
  return clean(t, TEXT_MAX);
}
function innerText(el) { return str(P(el, 'innerText')); }
function nameOf(el, tag) {
  const a = attr(el, 'aria-label');
  if (a) return clean(a);
  const lb = attr(el, 'aria-labelledby');
  if (lb) {
    const t = lb.split(/\s+/).map(function (id) {
      const x = M(doc, 'getElementById', id); return x ? innerText(x) : ''; });
    if (t.join('').trim()) return clean(t.join(' '));
  }
  const labels = CONTROLS[tag] ? P(el, 'labels') : null;
  if (labels && labels.length) return clean(innerText(labels[0]));
  if (tag === 'INPUT' && ['submit', 'button', 'reset'].includes(typeOf(el))) return clean(P(el, 'value'));
  if (tag === 'IMG') return clean(P(el, 'alt'));
  return clean(innerText(el) || attr(el, 'title') || attr(el, 'placeholder') || '');
}
// The HTTP status the document was served with (Chromium's PerformanceNavigationTiming.responseStatus; 0 where the
// browser does not say): an error page is recognised by its status, whatever words the app puts on it.
function navStatus() {
  try {
    const nav = performance.getEntriesByType('navigation')[0];
    const st = nav ? nav.responseStatus : 0;
    return typeof st === 'number' ? st : 0;
  } catch (e) { return 0; }
}
function pathOf(el) {
  const parts = [];
  const root = P(doc, 'documentElement');
  for (let e = el; e && P(e, 'nodeType') === 1 && e !== root; e = P(e, 'parentElement')) {
    const tag = tagOf(e);
    let i = 1;
    for (let s = P(e, 'previousElementSibling'); s; s = P(s, 'previousElementSibling')) if (tagOf(s) === tag) i++;
    parts.push(tag.toLowerCase() + '[' + i + ']');
  }
  return parts.reverse().join('/');
}
function visibleRect(el) {
  const r = M(el, 'getBoundingClientRect');
  if (r.width < 2 || r.height < 2) return null;
  const x1 = Math.max(0, r.left), y1 = Math.max(0, r.top), x2 = Math.min(w, r.right), y2 = Math.min(h, r.bottom);
  if (x2 - x1 < 2 || y2 - y1 < 2) return null;
  const st = getComputedStyle(el);
  if (st.visibility === 'hidden' || st.display === 'none' || parseFloat(st.opacity) === 0) return null;
  return [x1, y1, x2, y2];
}
function hits(el, rc) {
  const cx = (rc[0] + rc[2]) / 2, cy = (rc[1] + rc[3]) / 2;
  const top = M(doc, 'elementFromPoint', cx, cy);
  return !!top && (top === el || M(el, 'contains', top) || M(top, 'contains', el) && tagOf(top) === 'LABEL');
}
// The form a control submits to: its form owner (the ``form`` attribute counts), else the enclosing <form>.
function formOf(el, tag) {
  const owner = CONTROLS[tag] ? P(el, 'form') : null;
  return owner || M(el, 'closest', 'form');
}
// Containers whose ARIA role says what part of the page they are (a landmark, a dialog, an open menu, a live
// region: a flash, a toast, a clock): kept even without text of their own, so what is inside them can be told
// from the path (``graph.user_screens``; a flash is no part of a state, ``graph.abstraction``).
const REGIONS = '[role=alert],[role=status],[role=timer],[role=marquee],[role=dialog],[role=alertdialog],' +
  '[role=navigation],[role=main],[role=banner],[role=contentinfo],[role=complementary],[role=search],' +
  '[role=menu],[role=menubar],[role=listbox]';
const seen = new Set(), pushed = new Set(), out = [];
function add(el, interactive, region) {
  if (seen.has(el) || out.length >= MAX) return;
  seen.add(el);
  const rc = visibleRect(el);
  if (!rc) return;
  const tag = tagOf(el), type = tag === 'INPUT' ? typeOf(el) : '';
  const editable = (tag === 'INPUT' && !['checkbox', 'radio', 'submit', 'button', 'reset', 'image', 'hidden',
    'file', 'range', 'color'].includes(type)) || tag === 'TEXTAREA' || !!P(el, 'isContentEditable');
  const text = interactive ? nameOf(el, tag) : flowText(el) || (tag === 'IMG' ? clean(P(el, 'alt')) : '');
  if (!interactive && !text && !region) return;
  const form = formOf(el, tag);
  const st = getComputedStyle(el);
  const role = roleOf(el, tag);
  const control = !!CONTROLS[tag];
  out.push({
    tag: tag.toLowerCase(), type: type, role: role, text: text,
    desc: clean(attr(el, 'aria-description') || attr(el, 'title') || ''),
    rid: attr(el, 'data-testid') || attr(el, 'id') || attr(el, 'name') || '',
    path: pathOf(el), rect: rc,
    clickable: interactive && !editable, editable: !!editable,
    checkable: type === 'checkbox' || type === 'radio' || ['checkbox', 'radio', 'switch'].includes(role),
    checked: (control && !!P(el, 'checked')) || attr(el, 'aria-checked') === 'true',
    enabled: !(control && P(el, 'disabled')) && attr(el, 'aria-disabled') !== 'true',
    visible: hits(el, rc),
    scrollable: (st.overflowY === 'auto' || st.overflowY === 'scroll') &&
      P(el, 'scrollHeight') > P(el, 'clientHeight') + 4,
    href: tag === 'A' ? str(P(el, 'href')) : '',
    // ``action``/``method`` through the form's own getters: a control named "action" would otherwise be read.
    form_action: form ? (attr(form, 'action') ? str(P(form, 'action')) : location.href) : '',
    form_method: form ? (str(P(form, 'method')) || 'get').toLowerCase() : '',
    input_name: attr(el, 'name') || '', autocomplete: attr(el, 'autocomplete') || '',
    required: control && !!P(el, 'required'),
    value: editable ? clean(P(el, 'value'), 60) : tag === 'SELECT' ? str(P(el, 'value')) : '',
    pattern: attr(el, 'pattern') || '', min: attr(el, 'min') || '', max: attr(el, 'max') || '',
    step: attr(el, 'step') || '', maxlength: control ? (P(el, 'maxLength') || -1) : -1,
    minlength: control ? (P(el, 'minLength') || -1) : -1, placeholder: attr(el, 'placeholder') || '',
    options: tag === 'SELECT' ? Array.from(P(el, 'options')).map(function (o) {
      return [str(P(o, 'value')), clean(P(o, 'text'), 60), !!P(o, 'disabled')]; }).slice(0, 30) : [],
    dialog: !!M(el, 'closest', '[role=dialog],dialog'),
    suggest: tag === 'INPUT' && P(el, 'list') ? Array.from(P(P(el, 'list'), 'options')).map(function (o) {
      return str(P(o, 'value')); }).slice(0, 30) : [],
  });
  pushed.add(el);
}
function each(sel, interactive) {
  const list = M(doc, 'querySelectorAll', sel);
  for (let i = 0; i < list.length; i++) {
    try { add(list[i], interactive); } catch (e) { errors.push(clean(String(e), 200)); }
  }
}
const errors = [];
each(INTERACTIVE, true);
each(TEXTY, false);
const regions = M(doc, 'querySelectorAll', REGIONS);
for (let i = 0; i < regions.length; i++) {
  const el = regions[i];
  if (pushed.has(el)) continue;
  seen.delete(el);
  try { add(el, false, true); } catch (e) { errors.push(clean(String(e), 200)); }
}
const se = P(doc, 'scrollingElement') || P(doc, 'documentElement');
return {url: location.href, title: str(P(doc, 'title')), w: w, h: h, dpr: window.devicePixelRatio || 1,
  scrollY: P(se, 'scrollTop'), scrollH: P(se, 'scrollHeight'), token: window.__tfToken,
  ready: P(doc, 'readyState'), hidden: !!P(doc, 'hidden'), elements: out, errors: errors.slice(0, 5),
  status: navStatus()};
}
"""

# Waits inside the page, then calls ``done`` with {stable, waited, since, ...}. Quiet means: the document has
# loaded, no DOM mutation, scroll or finished request for ``quietMs`` (counted from the action too, so a reaction
# scheduled just after it is still awaited: from the last trusted input event since the previous wait, else from
# the script's start; ``since`` says how long before the start that was), no fetch/XHR younger than ``staleMs`` in
# flight (older ones are long polls that never end), no short timer the action set still to run (a debounced
# search: ``__tfInstall``), no finite CSS animation/transition running (infinite ones are
# spinners and never end either), one animation frame rendered after the action (or 100 ms passed where frames are
# throttled), and the document is not being left (``beforeunload`` seen: the next page is on its way).
# ``timeoutMs`` bounds it all: a page that never quiets is captured as it is.
_SETTLE = r"""
function __tfSettle(quietMs, timeoutMs, staleMs, done, early) {
  const fresh = __tfInstall();
  const t0 = performance.now();
  // Input since the last wait on this document: the quiet window counts from it (and a frame rendered after it is
  // the frame awaited). No input (a scroll or a value set by script, back to a cached page): from now.
  const act = window.__tfAct > window.__tfSettled ? window.__tfAct : 0;
  // A document first seen by this wait (the action navigated) counts from its last observable activity, and has
  // rendered a frame once it has painted.
  const since = act ? act : fresh ? window.__tfLast : t0;
  let framed = act > 0 && window.__tfActFrame > act;
  try { if (fresh && performance.getEntriesByType('paint').length) framed = true; } catch (e) {}
  try { requestAnimationFrame(function () { framed = true; }); } catch (e) { framed = true; }
  function pending(now) {
    let n = 0;
    for (const id in window.__tfPend) if (now - window.__tfPend[id] < staleMs) n++;
    n += __tfResPending(now, Math.max(__TF_RES_STALE_MS, staleMs));
    // an action's timer not run yet; one overdue by 250 ms (a throttled background tab) is not awaited
    for (const id in window.__tfTimers) if (now - window.__tfTimers[id] < 250) n++;
    return n;
  }
  function animating() {
    if (!Document.prototype.getAnimations) return 0;
    let n = 0;
    try {
      for (const a of __tfM(document, 'getAnimations')) {
        if (a.playState !== 'running') continue;
        const it = a.effect && a.effect.getTiming ? a.effect.getTiming().iterations : 1;
        if (it !== Infinity) n++;
      }
    } catch (e) {}
    return n;
  }
  // An animation's end is itself an event: transitionend / animationend handlers run a frame after the
  // animation stops, so the quiet window restarts when the last running animation was seen.
  let lastAnim = 0, looks = 0;
  function check() {
    const now = performance.now();
    const anim = animating();
    if (anim) lastAnim = now;
    const ready = __tfP(document, 'readyState') === 'complete';
    const quiet = now - Math.max(window.__tfLast, since, lastAnim) >= quietMs;
    const painted = framed || now - since >= 100;
    // Leaving: wait for the next document (this script then dies with this one and the caller waits on the new
    // page). A navigation that never commits (204, a download) holds this one wait to its timeout, not later ones.
    const leaving = window.__tfLeave > 0;
    // Scrolling: a scroll event not yet followed by its scrollend. A browser without ``scrollend`` (or a frame
    // starved for this long) is not held beyond a scroll event older than 150 ms.
    const scrolling = window.__tfScroll > window.__tfScrollEnd && now - window.__tfScroll < 150;
    // The first look finds the page already done with the action (nothing loading, moving or being left): the
    // caller may read the screen now, while the quiet window runs, and keep that reading if the window passes
    // without a change (its mark). Only the first look: a page that was still busy gets read after settling.
    looks++;
    if (looks === 1 && early && ready && !pending(now) && !anim && !leaving && !scrolling) early();
    if (ready && quiet && painted && !pending(now) && !anim && !leaving && !scrolling) {
      window.__tfSettled = now;
      done({stable: true, waited: now - t0, fresh: fresh, since: t0 - since, looks: looks});
      return;
    }
    if (now - t0 >= timeoutMs) {
      window.__tfLeave = 0;
      window.__tfSettled = now;
      done({stable: false, waited: now - t0, fresh: fresh, ready: __tfP(document, 'readyState'), quiet: quiet,
            pending: pending(now), animating: animating(), leaving: leaving, scrolling: scrolling,
            since: t0 - since, looks: looks});
      return;
    }
    window.__tfST.call(window, check, 8);  // the page's own setTimeout: not an action's timer
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
# Most actions are done with the page before the wait starts (the click handler ran, nothing was fetched), so
# the screen is read at the wait's first look and the quiet window then only confirms it: the reading is kept
# when the mark taken just before it is unchanged at the end (no mutation, request, scroll, load, input, focus,
# resize or animation since), else the screen is read again. ``settle.extract`` says which: "early" (kept),
# "again" (read early, changed, read again) or "after" (the page was busy at the first look).
SETTLE_EXTRACT_JS = _INSTALL + _EXTRACT + _SETTLE + """
const done = arguments[arguments.length - 1];
const MAX = arguments[3];
function read() {
  try { return {screen: __tfExtract(MAX), error: ''}; } catch (e) { return {screen: null, error: String(e)}; }
}
let early = null, mark = '';
__tfSettle(arguments[0], arguments[1], arguments[2], function (st) {
  const keep = early !== null && early.screen !== null && st.stable && mark === __tfMark();
  const got = keep ? early : read();
  st.extract = early === null ? 'after' : keep ? 'early' : 'again';
  done({settle: st, screen: got.screen, error: got.error});
}, function () { mark = __tfMark(); early = read(); });
"""

# Seconds since the page last showed loading activity: a resource finished, the DOM changed, a fetch/XHR is in flight
# (then 0). A screen that offers nothing yet is still drawing itself while this stays small (the landing wait).
IDLE_JS = r"""
const now = performance.now();
let last = 0;
try { for (const e of performance.getEntriesByType('resource')) last = Math.max(last, e.responseEnd); } catch (e) {}
try { if (window.__tfLast) last = Math.max(last, window.__tfLast); } catch (e) {}
try { if (window.__tfPend && Object.keys(window.__tfPend).length) return 0; } catch (e) {}
try {
  for (const id in window.__tfRes || {}) {
    const r = window.__tfRes[id];
    if (r.n.isConnected && now - r.t < __TF_RES_STALE_MS) return 0;
  }
} catch (e) {}
return (now - last) / 1000;
""".replace("__TF_RES_STALE_MS", str(RES_STALE_MS))

# The polling fallback's probe: page instance, readiness, DOM mutation count and scroll position.
PROBE_JS = _INSTALL + """
if (__tfInstall()) return [window.__tfToken, __tfP(document, 'readyState'), -1, 0];
const se = __tfP(document, 'scrollingElement') || __tfP(document, 'documentElement');
return [window.__tfToken, __tfP(document, 'readyState'), window.__tfMut, __tfP(se, 'scrollTop')];
"""
