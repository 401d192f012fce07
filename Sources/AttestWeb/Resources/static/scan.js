// The door scanner: reads a badge from the camera, a photo or pasted text. Where the browser
// has BarcodeDetector, the code is read here and checked against the campus's keys (ES256 with
// WebCrypto, so it works offline once the page has loaded) and, when online, by the server
// too. Where it has not (Safari on iPhone, Firefox, Chrome on Linux and Windows), camera
// frames (the viewfinder's square, 400 px, JPEG) go to the server three times a second until one holds a badge, and a
// photo goes whole; the server reads and checks it (`scan/image`). Each verdict shows in colour
// and words with a beep and a buzz where allowed; the camera looks again two seconds later.
// The keys are saved in localStorage and used offline for at most 12 hours. The door the
// screener names is kept there too and sent with each check, which the server counts per door
// and hour (verdicts given offline are not counted: the server never sees them).
(function () {
  'use strict';
  var root = document.getElementById('scanner');
  if (!root || !window.crypto || !window.crypto.subtle) return;
  var verdict = document.getElementById('verdict');
  var form = document.getElementById('paste-form');
  var field = document.getElementById('token');
  var door = document.getElementById('door');
  var doorKey = 'attest-door-' + root.dataset.campus;
  try { if (door && !door.value) door.value = localStorage.getItem(doorKey) || ''; } catch (e) { /* private mode */ }
  if (door) door.addEventListener('change', function () { try { localStorage.setItem(doorKey, door.value.trim()); } catch (e) { /* private mode */ } });
  function doorName() { return door ? door.value.trim() : ''; }
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
        return { valid: true, color: claims.color, date: claims.date, guest: typeof claims.guest === 'string' ? claims.guest : null };
      })
      .catch(function () { return { valid: false, reason: 'malformed' }; });
  }

  var reasons = { 'malformed': 'malformed', 'other-campus': 'other-campus', 'unknown-key': 'unknown-key', 'bad-signature': 'forged',
    'expired': 'expired', 'not-today': 'not-today', 'keys-old': 'keys-old' };

  // A short tone (higher for a valid badge) and a buzz, where the browser allows them.
  var sound = null;
  function signal(valid) {
    try {
      if (navigator.vibrate) navigator.vibrate(valid ? 120 : [80, 60, 80]);
      var Context = window.AudioContext || window.webkitAudioContext;
      if (!Context) return;
      sound = sound || new Context();
      var tone = sound.createOscillator(), gain = sound.createGain();
      tone.frequency.value = valid ? 880 : 220;
      gain.gain.value = 0.15;
      tone.connect(gain);
      gain.connect(sound.destination);
      tone.start();
      tone.stop(sound.currentTime + 0.15);
    } catch (e) { /* no sound here */ }
  }

  function show(result, note) {
    signal(result.valid);
    verdict.className = 'verdict ' + (result.valid ? result.color : 'invalid');
    verdict.textContent = result.valid ? t('genuine').replace('{0}', t(result.color)) + ' · ' + result.date : t(reasons[result.reason] || 'malformed');
    // A guest's day pass names the member they visit (DESIGN §12).
    if (result.valid && result.guest) verdict.textContent += ' · ' + t('guest-of').replace('{0}', result.guest);
    verdict.dataset.guest = result.valid && result.guest ? result.guest : '';
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
    // Full screen for two seconds, where the next person is looked for; a tap ends it sooner.
    verdict.classList.add('full');
    clearTimeout(fullTimer);
    fullTimer = setTimeout(function () { verdict.classList.remove('full'); }, 2000);
  }
  var fullTimer = null;
  verdict.addEventListener('click', function () { verdict.classList.remove('full'); });

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
          body: JSON.stringify(doorName() ? { token: token, door: doorName() } : { token: token })
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

  // The server's reading of an image: the verdict, or null when it found no QR code there.
  function readOnServer(blob) {
    var url = root.dataset.imageUrl + (doorName() ? '?door=' + encodeURIComponent(doorName()) : '');
    return fetch(url, {
      method: 'POST', credentials: 'same-origin', body: blob,
      headers: { 'Content-Type': blob.type || 'image/jpeg', 'X-CSRF-Token': root.dataset.csrf }
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (body) {
        if (response.ok) return body;
        if (response.status === 422 && body.type === '/problems/no-qr-code') return null;
        if (response.status === 429 || response.status === 503) throw new Error('busy');
        return { valid: false, reason: 'malformed', problem: body.type || '' };
      });
    });
  }

  function showServer(result) {
    if (result.valid) { show(result); return; }
    if (result.problem) { show({ valid: false, reason: 'malformed' }, t(result.problem === '/problems/not-a-badge' ? 'malformed' : 'not-a-photo')); return; }
    show(result, result.detail || '');
  }

  var detector = 'BarcodeDetector' in window ? new window.BarcodeDetector({ formats: ['qr_code'] }) : null;
  var image = document.getElementById('image');

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    if (field.value.trim() || !image.files || !image.files[0]) { check(field.value); return; }
    readPhoto(image.files[0]);
  });

  refreshKeys();

  // A photo: read here with BarcodeDetector, else by the server (online only).
  function readPhoto(file) {
    if (detector) return;
    if (!navigator.onLine) { show({ valid: false, reason: 'malformed' }, t('camera-offline')); return; }
    verdict.className = 'verdict wait';
    verdict.textContent = t('checking');
    readOnServer(file).then(function (result) {
      if (result) showServer(result); else show({ valid: false, reason: 'malformed' }, t('no-code'));
    }).catch(function () { show({ valid: false, reason: 'malformed' }, t('busy')); });
  }
  image.addEventListener('change', function () { if (!detector && image.files && image.files[0]) readPhoto(image.files[0]); });

  // The camera: once the button is pressed and the camera is granted, `look` runs.
  var button = document.getElementById('start-camera');
  var video = document.getElementById('camera');
  function startCamera(look) {
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' } }).then(function (stream) {
        video.srcObject = stream;
        video.hidden = false;
        video.play();
        button.hidden = true;
        look();
      }).catch(function () { button.hidden = true; });
    });
  }

  if (!detector) {
    // A frame to the server every 350 ms until one holds a badge; after a verdict, two
    // seconds' pause for the next person.
    var canvas = document.getElementById('frame');
    var next = function (delay) { setTimeout(frame, delay); };
    var frame = function () {
      if (!video.videoWidth) { next(200); return; }
      if (!navigator.onLine) { show({ valid: false, reason: 'malformed' }, t('camera-offline')); next(2000); return; }
      // The middle square, as the viewfinder shows it, at most 400 pixels a side: the badge
      // held up fills most of it, and the server reads it in half the time of a whole frame.
      var side = Math.min(video.videoWidth, video.videoHeight);
      var out = Math.min(side, 400);
      canvas.width = out;
      canvas.height = out;
      canvas.getContext('2d').drawImage(video, (video.videoWidth - side) / 2, (video.videoHeight - side) / 2, side, side, 0, 0, out, out);
      canvas.toBlob(function (blob) {
        if (!blob) { next(350); return; }
        readOnServer(blob).then(function (result) {
          if (!result) { next(350); return; }
          showServer(result);
          next(2000);
        }).catch(function () { next(1000); });
      }, 'image/jpeg', 0.7);
    };
    startCamera(frame);
  } else {
    image.addEventListener('change', function () {
      if (!image.files || !image.files[0]) return;
      createImageBitmap(image.files[0]).then(function (bitmap) { return detector.detect(bitmap); }).then(function (codes) {
        if (codes.length) { field.value = codes[0].rawValue; check(codes[0].rawValue); } else { show({ valid: false, reason: 'malformed' }, t('no-code')); }
      }).catch(function () { show({ valid: false, reason: 'malformed' }, t('no-code')); });
    });
    var last = '';
    var scan = function () {
      detector.detect(video).then(function (codes) {
        if (codes.length && codes[0].rawValue !== last) { last = codes[0].rawValue; field.value = last; check(last); }
      }).catch(function () {}).then(function () { setTimeout(scan, 400); });
    };
    startCamera(scan);
  }
})();
