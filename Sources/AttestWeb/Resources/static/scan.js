// The door scanner: reads a badge (camera where the browser has BarcodeDetector, a photo,
// or pasted text), checks it here against the campus's keys (ES256 with WebCrypto, so it
// works offline once the page has loaded) and, when online, asks the server too.
// The keys are saved in localStorage and used offline for at most 12 hours.
(function () {
  'use strict';
  var root = document.getElementById('scanner');
  if (!root || !window.crypto || !window.crypto.subtle) return;
  var verdict = document.getElementById('verdict');
  var form = document.getElementById('paste-form');
  var field = document.getElementById('token');
  var campus = root.dataset.campus;
  var zone = root.dataset.zone;
  var storeKey = 'attest-keys-' + campus;
  var maxAge = 12 * 3600 * 1000;
  var t = function (name) { return root.getAttribute('data-t-' + name) || name; };

  function b64urlBytes(text) {
    var base64 = text.replace(/-/g, '+').replace(/_/g, '/');
    while (base64.length % 4) base64 += '=';
    var binary = atob(base64);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function saved() {
    try {
      var entry = JSON.parse(localStorage.getItem(storeKey) || 'null');
      return entry && entry.keys ? entry : null;
    } catch (e) { return null; }
  }

  // Fetches the key set when online (every five minutes at most) and saves it.
  function refreshKeys() {
    var entry = saved();
    if (entry && Date.now() - entry.at < 5 * 60 * 1000) return Promise.resolve(entry);
    return fetch(root.dataset.keysUrl, { credentials: 'omit', cache: 'no-store' })
      .then(function (response) { if (!response.ok) throw new Error('keys'); return response.json(); })
      .then(function (set) {
        var fresh = { at: Date.now(), keys: set.keys || [] };
        try { localStorage.setItem(storeKey, JSON.stringify(fresh)); } catch (e) { /* private mode: memory only */ }
        return fresh;
      })
      .catch(function () { return entry; });
  }

  function today() {
    return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
  }

  // The verdict on this device: {valid, color, date} or {valid: false, reason}.
  function checkHere(token, entry) {
    var parts = token.split('.');
    if (parts.length !== 3) return Promise.resolve({ valid: false, reason: 'malformed' });
    var header, claims, signature;
    try {
      header = JSON.parse(new TextDecoder().decode(b64urlBytes(parts[0])));
      claims = JSON.parse(new TextDecoder().decode(b64urlBytes(parts[1])));
      signature = b64urlBytes(parts[2]);
    } catch (e) { return Promise.resolve({ valid: false, reason: 'malformed' }); }
    if (header.alg !== 'ES256' || signature.length !== 64) return Promise.resolve({ valid: false, reason: 'malformed' });
    // Another campus's badge is named as such (its key is not in this campus's set either).
    if (claims.campus !== campus) return Promise.resolve({ valid: false, reason: 'other-campus' });
    if (!entry || Date.now() - entry.at > maxAge) return Promise.resolve({ valid: false, reason: 'keys-old' });
    var jwk = entry.keys.filter(function (key) { return key.kid === header.kid; })[0];
    if (!jwk) return Promise.resolve({ valid: false, reason: 'unknown-key' });
    return crypto.subtle.importKey('jwk', { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y, ext: true },
      { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify'])
      .then(function (key) {
        return crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, signature, new TextEncoder().encode(parts[0] + '.' + parts[1]));
      })
      .then(function (good) {
        if (!good) return { valid: false, reason: 'bad-signature' };
        if (claims.campus !== campus) return { valid: false, reason: 'other-campus' };
        if (typeof claims.exp !== 'number' || claims.exp * 1000 <= Date.now()) return { valid: false, reason: 'expired' };
        if (claims.date !== today()) return { valid: false, reason: 'not-today' };
        return { valid: true, color: claims.color, date: claims.date };
      })
      .catch(function () { return { valid: false, reason: 'malformed' }; });
  }

  var reasons = { 'malformed': 'malformed', 'other-campus': 'other-campus', 'unknown-key': 'unknown-key', 'bad-signature': 'forged',
    'expired': 'expired', 'not-today': 'not-today', 'keys-old': 'keys-old' };

  function show(result, note) {
    verdict.className = 'verdict ' + (result.valid ? result.color : 'invalid');
    verdict.textContent = result.valid ? t('genuine').replace('{0}', t(result.color)) + ' · ' + result.date : t(reasons[result.reason] || 'malformed');
    verdict.dataset.valid = String(result.valid);
    verdict.dataset.reason = result.valid ? '' : result.reason;
    if (note) {
      var small = document.createElement('span');
      small.className = 'verdict-detail';
      small.textContent = note;
      verdict.appendChild(document.createElement('br'));
      verdict.appendChild(small);
    }
    verdict.focus();
  }

  function check(token) {
    token = token.trim();
    if (!token) return;
    verdict.className = 'verdict wait';
    verdict.textContent = t('checking');
    refreshKeys().then(function (entry) {
      return checkHere(token, entry).then(function (local) {
        if (!navigator.onLine) { show(local, t('offline')); return; }
        return fetch(root.dataset.verifyUrl, {
          method: 'POST', credentials: 'same-origin',
          headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': root.dataset.csrf },
          body: JSON.stringify({ token: token })
        }).then(function (response) {
          if (!response.ok) throw new Error('verify');
          return response.json();
        }).then(function (server) {
          if (local.valid && !server.valid) { show({ valid: false, reason: server.reason }, t('server-disagrees').replace('{0}', server.detail || server.reason)); return; }
          show(local, t('online'));
        }).catch(function () { show(local, t('offline')); });
      });
    });
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    check(field.value);
  });

  refreshKeys();

  if ('BarcodeDetector' in window) {
    var detector = new window.BarcodeDetector({ formats: ['qr_code'] });
    var upload = document.getElementById('upload');
    var image = document.getElementById('image');
    upload.hidden = false;
    image.addEventListener('change', function () {
      if (!image.files || !image.files[0]) return;
      createImageBitmap(image.files[0]).then(function (bitmap) { return detector.detect(bitmap); }).then(function (codes) {
        if (codes.length) { field.value = codes[0].rawValue; check(codes[0].rawValue); } else { show({ valid: false, reason: 'malformed' }, t('no-code')); }
      }).catch(function () { show({ valid: false, reason: 'malformed' }, t('no-code')); });
    });
    var button = document.getElementById('start-camera');
    var video = document.getElementById('camera');
    if (navigator.mediaDevices && navigator.mediaDevices.getUserMedia) {
      button.hidden = false;
      button.addEventListener('click', function () {
        navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' } }).then(function (stream) {
          video.srcObject = stream;
          video.hidden = false;
          video.play();
          var last = '';
          var scan = function () {
            detector.detect(video).then(function (codes) {
              if (codes.length && codes[0].rawValue !== last) { last = codes[0].rawValue; field.value = last; check(last); }
            }).catch(function () {}).then(function () { setTimeout(scan, 400); });
          };
          scan();
        }).catch(function () { button.hidden = true; });
      });
    }
  }
})();
