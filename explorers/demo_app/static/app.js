// Demo Notes client behaviour: live clock, rotating banner, phone nav drawer, modal dialogs, copy link.
// No framework and no build step; everything is wired through data-* attributes rendered by pages.py.
(function () {
  "use strict";

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function startClock() {
    var clock = document.querySelector("[data-clock]");
    if (!clock) return;
    function tick() {
      var d = new Date();
      clock.textContent = pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
      clock.setAttribute("datetime", d.toISOString());
    }
    tick();
    setInterval(tick, 1000);
  }

  function startBanner() {
    var banner = document.querySelector("[data-banner]");
    if (!banner) return;
    var messages;
    try { messages = JSON.parse(banner.getAttribute("data-messages") || "[]"); } catch (e) { return; }
    if (!messages.length) return;
    var index = parseInt(banner.getAttribute("data-index") || "0", 10) || 0;
    setInterval(function () {
      index = (index + 1) % messages.length;
      banner.textContent = messages[index];
      banner.setAttribute("data-index", String(index));
    }, 4000);
  }

  function setupNavToggle() {
    var toggle = document.querySelector("[data-nav-toggle]");
    if (!toggle) return;
    function setOpen(open) {
      document.body.classList.toggle("nav-open", open);
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    }
    toggle.addEventListener("click", function () {
      setOpen(!document.body.classList.contains("nav-open"));
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape") setOpen(false);
    });
  }

  var FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]), select, textarea, [tabindex]";
  var openDialog = null;
  var opener = null;

  function showDialog(id, trigger) {
    var dialog = document.getElementById(id);
    var backdrop = document.getElementById(id + "-backdrop");
    if (!dialog || !backdrop) return;
    backdrop.hidden = false;
    openDialog = dialog;
    opener = trigger;
    var first = dialog.querySelector(FOCUSABLE);
    if (first) first.focus();
  }

  function closeDialog() {
    if (!openDialog) return;
    document.getElementById(openDialog.id + "-backdrop").hidden = true;
    openDialog = null;
    if (opener) opener.focus();
    opener = null;
  }

  function trapFocus(event) {
    var items = openDialog.querySelectorAll(FOCUSABLE);
    if (!items.length) return;
    var first = items[0], last = items[items.length - 1];
    if (event.shiftKey && document.activeElement === first) { last.focus(); event.preventDefault(); }
    else if (!event.shiftKey && document.activeElement === last) { first.focus(); event.preventDefault(); }
  }

  function setupDialogs() {
    document.addEventListener("click", function (event) {
      var target = event.target;
      var open = target.closest && target.closest("[data-open-dialog]");
      if (open) { showDialog(open.getAttribute("data-open-dialog"), open); return; }
      if (target.closest && target.closest("[data-close-dialog]")) { closeDialog(); return; }
      if (target.hasAttribute && target.hasAttribute("data-dialog-backdrop")) closeDialog();
    });
    document.addEventListener("keydown", function (event) {
      if (!openDialog) return;
      if (event.key === "Escape") closeDialog();
      else if (event.key === "Tab") trapFocus(event);
    });
  }

  function setupCopy() {
    document.addEventListener("click", function (event) {
      var button = event.target.closest && event.target.closest("[data-copy-target]");
      if (!button) return;
      var input = document.getElementById(button.getAttribute("data-copy-target"));
      var status = document.querySelector("[data-copy-status]");
      if (!input) return;
      input.select();
      var done = function () { if (status) status.textContent = button.getAttribute("data-copied-text"); };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(input.value).then(done, done);
      } else {
        done();
      }
    });
  }

  startClock();
  startBanner();
  setupNavToggle();
  setupDialogs();
  setupCopy();
})();
