// andal web: live fragments and "select all". No library, no build step.
// An element with data-live="URL" is refetched every data-every milliseconds and its content
// replaced by the server-rendered (escaped) fragment; a failed fetch keeps the old content.
"use strict";
(function () {
  function live(el) {
    var every = parseInt(el.dataset.every, 10) || 2000;
    function tick() {
      fetch(el.dataset.live, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          el.innerHTML = html;
          el.dataset.updated = String(Date.now());
          el.classList.remove("stale");
        })
        .catch(function () { el.classList.add("stale"); })
        .finally(function () { setTimeout(tick, every); });
    }
    setTimeout(tick, every);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live]").forEach(live);
    document.querySelectorAll("[data-select-all]").forEach(function (box) {
      box.addEventListener("change", function () {
        box.closest("form").querySelectorAll('input[name="ids"]').forEach(function (b) {
          b.checked = box.checked;
        });
      });
    });
    document.querySelectorAll("button.danger").forEach(function (b) {
      b.addEventListener("click", function (e) {
        if (!window.confirm("Delete for good?")) { e.preventDefault(); }
      });
    });
  });
})();
