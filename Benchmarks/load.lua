-- wrk script for Benchmarks/: one route, requests spread over many members.
--   TARGET   the path, e.g. /v1/campuses/bench/attestations
--   METHOD   GET (default) or POST; a POST sends a submission of the demo survey
--   BODY     with METHOD=POST, a file whose bytes are every request's body instead (CONTENT_TYPE,
--            default application/json, says what they are: Benchmarks/scan sends a JPEG)
--   TOKENS   a file of session tokens, one per line; each request takes the next member's
--            (for submissions, each member's first of the day, so each should be a 201)
--   THREADS  wrk's -t
-- It prints one line: RESULT requests=… not_2xx=… socket_errors=… duration_us=… p50_us=… p99_us=…
--
-- Requests are written from two templates made once in `init`, the text before the token
-- and after it, so each costs one concatenation in Lua. wrk, the server and PostgreSQL share
-- this machine's cores, and `wrk.format` for every request (a table of headers walked and
-- joined) was about a third of wrk's CPU (docs/performance.md, "Issue 34, sixth round").

local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end

function init(args)
  tokens = {}
  local file = os.getenv("TOKENS")
  if file and file ~= "" then
    for line in io.lines(file) do tokens[#tokens + 1] = line end
  end
  step = tonumber(os.getenv("THREADS"))
  index = id + 1
  local target = os.getenv("TARGET")
  local method = os.getenv("METHOD") or "GET"
  local healthy = '"fever_chills": false, "cough": false, "shortness_of_breath": false, "fatigue": false, ' ..
    '"aches": false, "headache": false, "taste_smell": false, "sore_throat": false, "congestion": false, ' ..
    '"nausea": false, "diarrhea": false, "close_contact": false, "positive_test": false'
  local bodies = {
    '{"surveyVersion": 1, "answers": {' .. healthy .. ', "temperature": 36.8}}',
    '{"surveyVersion": 1, "answers": {' .. healthy:gsub('"cough": false', '"cough": true') .. '}}',
  }
  local body_file = os.getenv("BODY")
  if body_file and body_file ~= "" then
    local handle = assert(io.open(body_file, "rb"))
    bodies = { handle:read("*a") }
    handle:close()
  end
  -- Each template is wrk.format's request with a marker where the token goes, split there.
  local marker = "\0TOKEN\0"
  templates = {}
  for i, body in ipairs(method == "POST" and bodies or { false }) do
    local headers = {}
    if #tokens > 0 then headers["Authorization"] = "Bearer " .. marker end
    if method == "POST" then headers["Content-Type"] = os.getenv("CONTENT_TYPE") or "application/json" end
    local text = wrk.format(method, target, headers, body or nil)
    local at = text:find(marker, 1, true)
    templates[i] = at and { text:sub(1, at - 1), text:sub(at + #marker) } or { text, "" }
  end
  sent = 0
end

function request()
  local token = ""
  if #tokens > 0 then
    token = tokens[index]
    if token == nil then
      index = id + 1  -- round again: repeated submissions get 409, which the summary counts
      token = tokens[index]
    end
    index = index + step
  end
  sent = sent + 1
  -- Every tenth submission answers a cough (a yellow badge); the rest are healthy.
  local template = templates[(sent % 10 == 0 and #templates > 1) and 2 or 1]
  return template[1] .. token .. template[2]
end

function done(summary, latency, requests)
  -- wrk counts any status of 400 or more as an error; socket errors are counted apart.
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d not_2xx=%d socket_errors=%d duration_us=%d p50_us=%d p99_us=%d\n",
    summary.requests, e.status, e.connect + e.read + e.write + e.timeout, summary.duration,
    latency:percentile(50), latency:percentile(99)))
end
