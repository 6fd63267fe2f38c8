// Keyboard shortcuts for the review pages. No data is read from the page into HTML: only element
// lookups, focus changes and form submissions, so crawled text can never become markup here.
(function () {
  "use strict";
  const form = document.getElementById("label-form");
  if (!form) return;
  const panel = document.getElementById("reject-panel");
  const reason = form.querySelector("select[name=reason_code]");
  const help = document.getElementById("help");
  const button = (v) => form.querySelector("button[name=verdict][value=" + v + "]");
  let rejecting = false;

  function submit(verdict) {
    const b = button(verdict);
    if (b) form.requestSubmit(b);
  }
  function startReject() {
    rejecting = true;
    panel.classList.add("active");
    reason.focus();
  }
  function stopReject() {
    rejecting = false;
    panel.classList.remove("active");
  }
  function inText(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT");
  }

  form.querySelectorAll("textarea").forEach((ta) => ta.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); submit("edit"); }
  }));
  // Enter in the comment box means "reject", never the form's first button (accept).
  const comment = form.querySelector("input[name=comment]");
  if (comment) comment.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); submit("reject"); }
  });
  reason.addEventListener("change", () => panel.classList.add("active"));

  document.addEventListener("keydown", (ev) => {
    const el = document.activeElement;
    if (ev.key === "Escape") {
      if (el) el.blur();
      stopReject();
      if (help) help.hidden = true;
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || inText(el)) return;
    if (rejecting && /^[1-9]$/.test(ev.key)) {
      const idx = Number(ev.key);
      if (idx < reason.options.length) {
        ev.preventDefault();
        reason.selectedIndex = idx;
        submit("reject");
      }
      return;
    }
    switch (ev.key) {
      case "a": ev.preventDefault(); submit("accept"); break;
      case "r": ev.preventDefault(); startReject(); break;
      case "e": ev.preventDefault(); focusEnd(form.querySelector("textarea[name=instruction]")); break;
      case "w": ev.preventDefault(); focusEnd(form.querySelector("textarea[name=reasoning]")); break;
      case "s": {
        const skip = document.querySelector("[data-testid=skip]");
        if (skip) { ev.preventDefault(); window.location.assign(skip.href); }
        break;
      }
      case "?": if (help) help.hidden = !help.hidden; break;
      default: break;
    }
  });

  function focusEnd(ta) {
    if (!ta) return;
    ta.focus();
    ta.setSelectionRange(ta.value.length, ta.value.length);
  }
})();
