// The front desk's kiosk: registers a visitor and their answers without leaving the page (the
// screener vouches instead of an emailed code), shows the guest's badge and its QR code to
// photograph or print, and clears everything for the next visitor: on "Next visitor", and by
// itself two minutes later. Nothing of a visitor stays: no navigation (no history entry), no
// cookie, a form that asks the browser not to remember what was typed, and reset after each.
(function () {
  'use strict';
  var form = document.getElementById('kiosk-form');
  var result = document.getElementById('kiosk-result');
  if (!form || !result || !window.fetch) return;
  var status = document.getElementById('kiosk-status');
  var timer = null;

  function clear() {
    if (timer) { clearTimeout(timer); timer = null; }
    ['kiosk-word', 'kiosk-guest', 'kiosk-host', 'kiosk-reason'].forEach(function (id) { document.getElementById(id).textContent = ''; });
    document.getElementById('kiosk-qr').replaceChildren();
    document.getElementById('kiosk-badge').className = 'badge';
    result.hidden = true;
    form.reset();
    form.hidden = false;
    status.textContent = '';
    var first = document.getElementById('visit-name');
    if (first) first.focus();
  }

  function show(badge) {
    document.getElementById('kiosk-badge').className = 'badge ' + badge.color;
    document.getElementById('kiosk-word').textContent = result.getAttribute('data-t-guest') + ' · ' + badge.colorWord;
    document.getElementById('kiosk-guest').textContent = badge.guestName;
    document.getElementById('kiosk-host').textContent = badge.guestOf;
    document.getElementById('kiosk-reason').textContent = badge.reason;
    var svg = new DOMParser().parseFromString(badge.qr, 'image/svg+xml').documentElement;
    document.getElementById('kiosk-qr').replaceChildren(document.importNode(svg, true));
    form.reset();
    form.hidden = true;
    result.hidden = false;
    status.textContent = '';
    document.getElementById('kiosk-next').focus();
    timer = setTimeout(clear, 120000);
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    status.textContent = form.getAttribute('data-t-working');
    var csrf = form.querySelector('input[name=csrf]').value;
    fetch(form.action, {
      method: 'POST', credentials: 'same-origin', body: new URLSearchParams(new FormData(form)),
      headers: { 'Accept': 'application/json', 'X-CSRF-Token': csrf }
    }).then(function (response) {
      var type = response.headers.get('Content-Type') || '';
      if (response.ok) return response.json().then(show);
      if (type.indexOf('json') >= 0) {
        return response.json().then(function (problem) {
          status.textContent = (problem.errors || []).map(function (e) { return e.message; }).join(' · ') || problem.detail || problem.title;
        });
      }
      return response.text().then(function (html) {
        var page = new DOMParser().parseFromString(html, 'text/html');
        var heading = page.querySelector('main h1'), detail = page.querySelector('main p');
        status.textContent = (heading ? heading.textContent + ': ' : '') + (detail ? detail.textContent : response.status);
      });
    }).catch(function () { status.textContent = 'The server could not be reached: try again.'; });
  });
  document.getElementById('kiosk-next').addEventListener('click', clear);
  document.getElementById('kiosk-print').addEventListener('click', function () { window.print(); });
})();
