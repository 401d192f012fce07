// The badge page: the time now and the time left, ticking each second, so a live badge is
// easy to tell from a screenshot. Reads its deadline from data-valid-until (ISO 8601).
(function () {
  var badge = document.querySelector('[data-valid-until]');
  if (!badge) return;
  var until = Date.parse(badge.getAttribute('data-valid-until'));
  var clock = document.getElementById('clock');
  var left = document.getElementById('countdown');
  var expired = badge.getAttribute('data-expired-text') || 'expired';
  function two(n) { return (n < 10 ? '0' : '') + n; }
  function tick() {
    var now = new Date();
    if (clock) clock.textContent = two(now.getHours()) + ':' + two(now.getMinutes()) + ':' + two(now.getSeconds());
    if (left) {
      var seconds = Math.max(0, Math.floor((until - now.getTime()) / 1000));
      left.textContent = seconds === 0 ? expired :
        Math.floor(seconds / 3600) + ':' + two(Math.floor(seconds % 3600 / 60)) + ':' + two(seconds % 60);
    }
  }
  tick();
  setInterval(tick, 1000);
})();
