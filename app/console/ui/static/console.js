// Requests page: new rows appear without a reload (the server renders them; no library).
(function () {
  var rows = document.getElementById("rows");
  if (!rows || !rows.dataset.live) return;
  setInterval(function () {
    fetch(rows.dataset.live, {credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) rows.innerHTML = html; })
      .catch(function () {});
  }, 3000);
})();
