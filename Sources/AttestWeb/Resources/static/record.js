// Journal: a recording made with the microphone (MediaRecorder, where the browser has it)
// fills the entry form's file input, so it is sent with the entry like a chosen file.
// Without it, or without script, the file input alone works. A file over 5 MB is caught here
// before a long upload that the server would refuse anyway.
(function () {
  var input = document.getElementById('entry-audio');
  var box = document.querySelector('.recorder');
  if (!input || !box) return;
  var maxBytes = 5 * 1024 * 1024, maxMs = 10 * 60 * 1000;
  var status = box.querySelector('.record-status'), preview = box.querySelector('.record-preview');
  var button = box.querySelector('.record-button');
  input.form.addEventListener('submit', function (event) {
    if (input.files.length && input.files[0].size > maxBytes) {
      event.preventDefault();
      box.hidden = false;
      status.textContent = box.dataset.tooLarge;
      input.focus();
    }
  });
  if (!window.MediaRecorder || !navigator.mediaDevices || !navigator.mediaDevices.getUserMedia || !window.DataTransfer) return;
  box.hidden = false;
  var recorder = null, started = 0, timer = null;
  function chosenType() {
    var types = ['audio/webm;codecs=opus', 'audio/webm', 'audio/ogg;codecs=opus', 'audio/mp4'];
    for (var i = 0; i < types.length; i++) if (MediaRecorder.isTypeSupported(types[i])) return types[i];
    return '';
  }
  function clock(ms) {
    var s = Math.floor(ms / 1000);
    return Math.floor(s / 60) + ':' + ('0' + (s % 60)).slice(-2);
  }
  button.addEventListener('click', function () {
    if (recorder && recorder.state === 'recording') { recorder.stop(); return; }
    navigator.mediaDevices.getUserMedia({ audio: true }).then(function (stream) {
      var type = chosenType(), chunks = [];
      recorder = type ? new MediaRecorder(stream, { mimeType: type }) : new MediaRecorder(stream);
      recorder.ondataavailable = function (event) { if (event.data && event.data.size) chunks.push(event.data); };
      recorder.onstop = function () {
        stream.getTracks().forEach(function (track) { track.stop(); });
        clearInterval(timer);
        button.textContent = box.dataset.record;
        var bare = (recorder.mimeType || type || 'audio/webm').split(';')[0];
        var blob = new Blob(chunks, { type: bare });
        if (blob.size > maxBytes) { status.textContent = box.dataset.tooLarge; return; }
        var name = 'recording.' + ({ 'audio/ogg': 'ogg', 'audio/mp4': 'm4a' }[bare] || 'webm');
        var transfer = new DataTransfer();
        transfer.items.add(new File([blob], name, { type: bare }));
        input.files = transfer.files;
        preview.src = URL.createObjectURL(blob);
        preview.hidden = false;
        status.textContent = box.dataset.recorded.replace('{0}', clock(Date.now() - started));
      };
      recorder.start(1000);
      started = Date.now();
      button.textContent = box.dataset.stop;
      status.textContent = box.dataset.recording.replace('{0}', '0:00');
      timer = setInterval(function () {
        var elapsed = Date.now() - started;
        status.textContent = box.dataset.recording.replace('{0}', clock(elapsed));
        if (elapsed >= maxMs && recorder.state === 'recording') recorder.stop();
      }, 1000);
    }, function () { status.textContent = box.dataset.denied; });
  });
})();
