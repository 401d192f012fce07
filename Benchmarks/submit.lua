-- wrk script for Benchmarks/submit: every request is a different member's first attestation
-- of the day (each member may submit once a day), so every answer should be a 201.
-- TOKENS names a file of session tokens, one per line; THREADS is wrk's -t.

local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end

function init(args)
  tokens = {}
  for line in io.lines(os.getenv("TOKENS")) do tokens[#tokens + 1] = line end
  step = tonumber(os.getenv("THREADS"))
  index = id + 1
  path = "/v1/campuses/" .. os.getenv("CAMPUS") .. "/attestations"
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
  local token = tokens[index]
  if token == nil then
    index = id + 1  -- out of members: repeats now get 409, which the summary counts
    token = tokens[index]
  end
  index = index + step
  sent = sent + 1
  return wrk.format("POST", path, {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
  }, bodies[(sent % 10 == 0) and 2 or 1])
end

function done(summary, latency, requests)
  -- Every success is a 201 here; anything else (409, 5xx) is counted by wrk as a status error.
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d not_2xx=%d socket_errors=%d duration_us=%d p50_us=%d p99_us=%d\n",
    summary.requests, e.status, e.connect + e.read + e.write + e.timeout, summary.duration,
    latency:percentile(50), latency:percentile(99)))
end
