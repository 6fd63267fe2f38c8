// The review pages' behaviour: keyboard shortcuts and the action editor (drag the point, draw the box).
// Nothing read from the page ever becomes markup here: the script moves focus, submits forms, writes numbers
// into inputs and numeric SVG attributes, and toggles classes, so crawled text can never run as code.
(function () {
  "use strict";
  const form = document.getElementById("label-form");
  const undoForm = document.getElementById("undo-form") || document.querySelector("form.undo");

  // ------------------------------------------------------------------ action editor
  const svg = document.getElementById("overlay");
  const editable = svg && svg.classList.contains("editable") && form;
  const field = (name) => form && form.elements.namedItem(name);
  const W = svg ? Number(svg.dataset.width) : 0;
  const H = svg ? Number(svg.dataset.height) : 0;
  const point = document.getElementById("ov-point");
  const end = document.getElementById("ov-end");
  const box = document.getElementById("ov-box");
  const arrow = document.getElementById("ov-arrow");
  const typeSel = document.getElementById("a_type");
  let boxing = false;

  function markChanged(el) {
    if (!el || el.dataset.orig === undefined) return;
    const v = (el.value || "").replace(/\r\n/g, "\n").trim();
    const o = (el.dataset.orig || "").replace(/\r\n/g, "\n").trim();
    el.classList.toggle("changed", v !== o);
  }
  function setValue(name, v) {
    const el = field(name);
    if (!el) return;
    el.value = v === null ? "" : String(v);
    markChanged(el);
  }
  function num(name) {
    const el = field(name);
    const v = el ? parseFloat(el.value) : NaN;
    return Number.isFinite(v) ? v : null;
  }
  function toImage(ev) {
    const r = svg.getBoundingClientRect();
    const x = Math.min(Math.max((ev.clientX - r.left) * W / r.width, 0), W);
    const y = Math.min(Math.max((ev.clientY - r.top) * H / r.height, 0), H);
    return [Math.round(x), Math.round(y)];
  }
  function placeGroup(g, x, y) {
    if (!g) return;
    const dx = x - Number(g.dataset.x), dy = y - Number(g.dataset.y);
    g.setAttribute("transform", "translate(" + dx + " " + dy + ")");
  }
  function uses() {
    if (!typeSel) return [];
    const opt = typeSel.options[typeSel.selectedIndex];
    return (opt && opt.dataset.uses ? opt.dataset.uses.split(" ") : []);
  }
  function refresh() {
    if (!editable) return;
    const u = uses();
    document.querySelectorAll("#action-editor .grp").forEach((g) => g.classList.toggle("off", u.indexOf(g.dataset.group) < 0));
    const x = num("a_x"), y = num("a_y");
    if (point) {
      const on = u.indexOf("point") >= 0 && x !== null && y !== null;
      point.classList.toggle("ph", !on);
      if (on) placeGroup(point, x, y);
    }
    const x2 = num("a_x2"), y2 = num("a_y2");
    if (end) {
      const on = u.indexOf("end") >= 0 && x2 !== null && y2 !== null;
      end.classList.toggle("ph", !on);
      if (on) placeGroup(end, x2, y2);
    }
    if (arrow && x !== null && y !== null) { arrow.setAttribute("x1", x); arrow.setAttribute("y1", y); }
    if (arrow && x2 !== null && y2 !== null) { arrow.setAttribute("x2", x2); arrow.setAttribute("y2", y2); }
    if (box) {
      const b = [num("b_x1"), num("b_y1"), num("b_x2"), num("b_y2")];
      const on = u.indexOf("box") >= 0 && b.every((v) => v !== null);
      box.classList.toggle("ph", !on);
      if (on) {
        box.setAttribute("x", Math.min(b[0], b[2])); box.setAttribute("y", Math.min(b[1], b[3]));
        box.setAttribute("width", Math.abs(b[2] - b[0])); box.setAttribute("height", Math.abs(b[3] - b[1]));
      }
    }
  }
  function setBoxing(on) {
    boxing = on;
    if (svg) svg.classList.toggle("boxing", on);
    const b = document.getElementById("box-draw");
    if (b) b.classList.toggle("active", on);
  }

  if (editable) {
    let drag = null;  // "point" | "end" | "box"
    let start = null;
    svg.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      ev.preventDefault();
      // Working on the picture leaves any text box, so the keyboard shortcuts (b, a, …) apply again.
      if (document.activeElement && document.activeElement.blur) document.activeElement.blur();
      const [x, y] = toImage(ev);
      if (boxing && uses().indexOf("box") < 0) {
        setBoxing(false);  // this action type has no target box (e.g. done): nothing invisible is drawn
        return;
      }
      if (boxing) {
        drag = "box"; start = [x, y];
        ["b_x1", "b_y1", "b_x2", "b_y2"].forEach((n, i) => setValue(n, [x, y, x, y][i]));
      } else if (end && !end.classList.contains("ph") && end.contains(ev.target)) {
        drag = "end";
      } else {
        drag = "point";
        if (uses().indexOf("point") >= 0) { setValue("a_x", x); setValue("a_y", y); }
      }
      svg.setPointerCapture(ev.pointerId);
      refresh();
    });
    svg.addEventListener("pointermove", (ev) => {
      if (!drag) return;
      const [x, y] = toImage(ev);
      if (drag === "box") {
        setValue("b_x1", Math.min(start[0], x)); setValue("b_y1", Math.min(start[1], y));
        setValue("b_x2", Math.max(start[0], x)); setValue("b_y2", Math.max(start[1], y));
      } else if (drag === "end") {
        setValue("a_x2", x); setValue("a_y2", y);
      } else if (uses().indexOf("point") >= 0) {
        setValue("a_x", x); setValue("a_y", y);
      }
      refresh();
    });
    const stop = () => { if (drag === "box") setBoxing(false); drag = null; };
    svg.addEventListener("pointerup", stop);
    svg.addEventListener("pointercancel", stop);
    form.querySelectorAll("#action-editor input, #action-editor select").forEach((el) =>
      el.addEventListener("input", () => { markChanged(el); refresh(); }));
    if (typeSel) typeSel.addEventListener("change", () => {
      markChanged(typeSel);
      const u = uses();
      // A pointed type needs a point: start it at the centre so there is something to drag.
      if (u.indexOf("point") >= 0 && (num("a_x") === null || num("a_y") === null)) {
        setValue("a_x", Math.round(W / 2)); setValue("a_y", Math.round(H / 2));
      }
      if (u.indexOf("end") >= 0 && (num("a_x2") === null || num("a_y2") === null) && num("a_x") !== null) {
        setValue("a_x2", num("a_x")); setValue("a_y2", Math.round(Math.max(num("a_y") - H / 4, 0)));
      }
      refresh();
    });
    const drawBtn = document.getElementById("box-draw");
    if (drawBtn) drawBtn.addEventListener("click", () => setBoxing(!boxing && uses().indexOf("box") >= 0));
    const clearBtn = document.getElementById("box-clear");
    if (clearBtn) clearBtn.addEventListener("click", () => { ["b_x1", "b_y1", "b_x2", "b_y2"].forEach((n) => setValue(n, "")); refresh(); });
    const reset = document.getElementById("action-reset");
    if (reset) reset.addEventListener("click", () => {
      form.querySelectorAll("#action-editor [data-orig]").forEach((el) => { el.value = el.dataset.orig; markChanged(el); });
      refresh();
    });
    form.querySelectorAll("textarea[data-orig]").forEach((el) => el.addEventListener("input", () => markChanged(el)));
    refresh();
  }

  // ------------------------------------------------------------------ filmstrip, help, adjudication
  const help = document.getElementById("help");
  const helpToggle = document.getElementById("help-toggle");
  if (help && helpToggle) helpToggle.addEventListener("click", () => { help.hidden = !help.hidden; });
  // "[" / "]": the neighbouring step in the filmstrip (a plain link, so leaving with unsaved edits asks first).
  function goStep(delta) {
    const cur = document.querySelector(".filmstrip li.current");
    const li = cur && (delta < 0 ? cur.previousElementSibling : cur.nextElementSibling);
    const a = li && li.querySelector("a[href]");
    if (a) { a.click(); return true; }
    return false;
  }
  function inField(el) { return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT"); }

  const ruling = document.getElementById("ruling-form");
  if (ruling) {
    // The adjudication page: 1–9 adopt a label, a / r accept / reject the original, Enter records the ruling,
    // n skips to the next open disagreement, h hides the marks, [ / ] step through the trajectory.
    const overlayEl = document.getElementById("overlay");
    const pick = (key) => {
      const r = ruling.querySelector("input[type=radio][data-key='" + key + "']");
      if (r) r.checked = true;
      return r;
    };
    ruling.querySelectorAll("input[name=comment]").forEach((inp) => inp.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); if (ev.ctrlKey || ev.metaKey) ruling.requestSubmit(); }
    }));
    document.addEventListener("keydown", (ev) => {
      const el = document.activeElement;
      if (ev.key === "Escape") { if (el && el.blur) el.blur(); if (help) help.hidden = true; return; }
      if (ev.ctrlKey && ev.key === "Enter") { ev.preventDefault(); ruling.requestSubmit(); return; }
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (inField(el) && !(el.type === "radio")) {
        if (ev.key === "Enter" && el.tagName === "SELECT") { ev.preventDefault(); ruling.requestSubmit(); }
        return;
      }
      if (/^[1-9]$/.test(ev.key)) { if (pick(ev.key)) ev.preventDefault(); return; }
      switch (ev.key) {
        case "a": ev.preventDefault(); pick("a"); break;
        case "r": {
          ev.preventDefault(); pick("r");
          const sel = ruling.querySelector("select[name=reason_code]");
          if (sel) sel.focus();
          break;
        }
        case "c": { ev.preventDefault(); const c = ruling.querySelector("input[name=comment]"); if (c) c.focus(); break; }
        case "Enter": ev.preventDefault(); ruling.requestSubmit(); break;
        case "n": { const n = document.getElementById("adjudicate-skip"); if (n) { ev.preventDefault(); n.click(); } break; }
        case "h": if (overlayEl) { ev.preventDefault(); overlayEl.classList.toggle("hidden-marks"); } break;
        case "[": if (goStep(-1)) ev.preventDefault(); break;
        case "]": if (goStep(1)) ev.preventDefault(); break;
        case "?": if (help) help.hidden = !help.hidden; break;
        default: break;
      }
    });
    return;
  }

  // ------------------------------------------------------------------ keyboard
  if (!form) {
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "u" && undoForm && !ev.ctrlKey && !ev.metaKey && !ev.altKey) { ev.preventDefault(); undoForm.requestSubmit(); }
    });
    return;
  }
  // Leaving with unsaved edits (a filmstrip thumbnail, the nav bar, Back, closing the tab) asks first; saving,
  // skipping or discarding through the form does not. Unsaved = differs from what the page loaded with, or a
  // refused submission's edits (shown again with its error, still unsaved).
  const loaded = new Map();
  form.querySelectorAll("textarea, input, select").forEach((el) => loaded.set(el, el.value));
  const refused = !!document.querySelector("[data-testid=form-error]");
  let submitting = false;
  form.addEventListener("submit", () => { submitting = true; });
  function unsaved() {
    for (const [el, v] of loaded) if (el.value !== v) return true;
    return refused && !!form.querySelector(".changed");
  }
  window.addEventListener("beforeunload", (ev) => {
    if (submitting || !unsaved()) return;
    ev.preventDefault();
    ev.returnValue = "";
  });

  const panel = document.getElementById("reject-panel");
  const reason = form.querySelector("select[name=reason_code]");
  const button = (v) => form.querySelector("button[name=verdict][value=" + v + "]");
  let rejecting = false;

  function submit(verdict) {
    const b = button(verdict);
    if (b) form.requestSubmit(b);
  }
  function startReject() { rejecting = true; panel.classList.add("active"); reason.focus(); }
  function stopReject() { rejecting = false; panel.classList.remove("active"); }
  function inText(el) { return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT"); }
  function focusEnd(ta) {
    if (!ta) return;
    ta.focus();
    if (ta.setSelectionRange) ta.setSelectionRange(ta.value.length, ta.value.length);
  }

  form.querySelectorAll("textarea").forEach((ta) => ta.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); submit("edit"); }
  }));
  // Enter in a one-line box never submits through the form's first button (accept) by accident.
  form.querySelectorAll("input[type=text], input:not([type])").forEach((inp) => inp.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); if (ev.ctrlKey || ev.metaKey) submit("edit"); }
  }));
  reason.addEventListener("change", () => panel.classList.add("active"));

  document.addEventListener("keydown", (ev) => {
    const el = document.activeElement;
    if (ev.key === "Escape") {
      if (el) el.blur();
      stopReject(); setBoxing(false);
      if (help) help.hidden = true;
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (inText(el) && !(rejecting && el === reason)) return;
    if (rejecting && /^[1-9]$/.test(ev.key)) {
      const idx = Number(ev.key);
      if (idx < reason.options.length) {
        ev.preventDefault();
        reason.selectedIndex = idx;
        submit("reject");
      }
      return;
    }
    if (inText(el)) return;
    switch (ev.key) {
      case "a": ev.preventDefault(); submit("accept"); break;
      case "r": ev.preventDefault(); startReject(); break;
      case "e": ev.preventDefault(); focusEnd(form.querySelector("textarea[name=instruction]")); break;
      case "w": ev.preventDefault(); focusEnd(form.querySelector("textarea[name=reasoning]")); break;
      case "t": {
        ev.preventDefault();
        const d = form.querySelector("details.task-edit");
        if (d) d.open = true;
        focusEnd(form.querySelector("textarea[name=task]"));
        break;
      }
      case "b": if (editable && uses().indexOf("box") >= 0) { ev.preventDefault(); setBoxing(!boxing); } break;
      case "s": ev.preventDefault(); submit("skip"); break;
      case "u": if (undoForm) { ev.preventDefault(); undoForm.requestSubmit(); } break;
      case "[": if (goStep(-1)) ev.preventDefault(); break;
      case "]": if (goStep(1)) ev.preventDefault(); break;
      case "?": if (help) help.hidden = !help.hidden; break;
      default: break;
    }
  });
})();
