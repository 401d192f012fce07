// The member's record page: presenting a SMART Health Card with the camera. Where the browser
// has BarcodeDetector (Chrome on Android and macOS, Safari 17 on macOS), a button starts the
// camera and reads QR codes until it has a whole card: one shc:/ text, or every chunk
// shc:/N/M/ of one; the texts go in the form's text box and the form is sent. Elsewhere the
// button stays hidden, and the member pastes the text or chooses a photo, which the server reads.
(function () {
  'use strict';
  var form = document.getElementById('card-form');
  var box = document.getElementById('shc-camera');
  if (!form || !box || !('BarcodeDetector' in window) || !navigator.mediaDevices) return;
  var button = document.getElementById('shc-scan');
  var video = document.getElementById('shc-video');
  var status = document.getElementById('shc-status');
  var text = document.getElementById('shc-text');
  var t = function (name) { return form.getAttribute('data-t-' + name) || name; };
  var detector, stream = null, chunks = {};

  function stop() {
    if (stream) stream.getTracks().forEach(function (track) { track.stop(); });
    stream = null;
    video.hidden = true;
    button.textContent = t('scan');
  }

  // A whole card: the text itself, or all M chunks, in order.
  function take(value) {
    var match = /^shc:\/(?:(\d+)\/(\d+)\/)?\d+$/i.exec(value.trim());
    if (!match) return null;
    if (!match[1]) return value.trim();
    var total = Number(match[2]);
    chunks[match[1]] = value.trim();
    var have = Object.keys(chunks).length;
    status.textContent = t('chunk').replace('{0}', have).replace('{1}', total);
    if (have < total) return null;
    var all = [];
    for (var index = 1; index <= total; index++) { if (!chunks[index]) return null; all.push(chunks[index]); }
    return all.join('\n');
  }

  function look() {
    if (!stream) return;
    detector.detect(video).then(function (codes) {
      for (var i = 0; i < codes.length; i++) {
        var card = take(codes[i].rawValue || '');
        if (card) { text.value = card; stop(); form.submit(); return; }
      }
      setTimeout(look, 250);
    }).catch(function () { setTimeout(look, 500); });
  }

  BarcodeDetector.getSupportedFormats().then(function (formats) {
    if (formats.indexOf('qr_code') < 0) return;
    detector = new BarcodeDetector({ formats: ['qr_code'] });
    box.hidden = false;
    button.addEventListener('click', function () {
      if (stream) { stop(); return; }
      chunks = {};
      navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false }).then(function (media) {
        stream = media;
        video.srcObject = media;
        video.hidden = false;
        button.textContent = t('stop');
        status.textContent = t('looking');
        return video.play();
      }).then(look).catch(function () { stop(); });
    });
  }).catch(function () { /* no detector: paste or a photo */ });
})();
