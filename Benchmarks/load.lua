-- wrk script for Benchmarks/: one route, requests spread over many members.
--   TARGET   the path, e.g. /v1/campuses/bench/attestations
--   METHOD   GET (default) or POST; a POST sends a submission of the demo survey
--   TOKENS   a file of session tokens, one per line; each request takes the next member's
--            (for submissions, each member's first of the day, so each should be a 201)
--   THREADS  wrk's -t
-- It prints one line: RESULT requests=… not_2xx=… socket_errors=… duration_us=… p50_us=… p99_us=…

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
  target = os.getenv("TARGET")
  method = os.getenv("METHOD") or "GET"
  local healthy = '"fever_chills": false, "cough": false, "shortness_of_breath": false, "fatigue": false, ' ..
    '"aches": false, "headache": false, "taste_smell": false, "sore_throat": false, "congestion": false, ' ..
    '"nausea": false, "diarrhea": false, "close_contact": false, "positive_test": false'
  bodies = {
    '{"surveyVersion": 1, "answers": {' .. healthy .. ', "temperature": 36.8}}',
    '{"surveyVersion": 1, "answers": {' .. healthy:gsub('"cough": false', '"cough": true') .. '}}',
  }
  sent = 0
end

function request()
  local headers = {}
  if #tokens > 0 then
    local token = tokens[index]
    if token == nil then
      index = id + 1  -- round again: repeated submissions get 409, which the summary counts
      token = tokens[index]
    end
    index = index + step
    headers["Authorization"] = "Bearer " .. token
  end
  sent = sent + 1
  if method == "POST" then
    headers["Content-Type"] = "application/json"
    return wrk.format("POST", target, headers, bodies[(sent % 10 == 0) and 2 or 1])
  end
  return wrk.format(method, target, headers)
end

function done(summary, latency, requests)
  -- wrk counts any status of 400 or more as an error; socket errors are counted apart.
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d not_2xx=%d socket_errors=%d duration_us=%d p50_us=%d p99_us=%d\n",
    summary.requests, e.status, e.connect + e.read + e.write + e.timeout, summary.duration,
    latency:percentile(50), latency:percentile(99)))
end
