/// The OpenAPI 3.1 description of every route, served at `/openapi.yaml`. Tests check that
/// every route the router registers is described here and that real responses match it.
public enum OpenAPIDocument {
    public static let yaml = value.yaml

    private static func ref(_ schema: String) -> OpenAPIValue { ["$ref": .string("#/components/schemas/\(schema)")] }
    private static func responseRef(_ name: String) -> OpenAPIValue { ["$ref": .string("#/components/responses/\(name)")] }

    private static func json(_ description: String, _ schema: OpenAPIValue, links: OpenAPIValue? = nil) -> OpenAPIValue {
        var response: OpenAPIValue = ["description": .string(description), "content": ["application/json": ["schema": schema]]]
        if let links, case .object(var members) = response {
            members.append(OpenAPIValue.Member(key: "links", value: links))
            response = .object(members)
        }
        return response
    }

    private static func problem(_ description: String) -> OpenAPIValue {
        ["description": .string(description), "content": ["application/problem+json": ["schema": ref("Problem")]]]
    }

    private static let campusParameter: OpenAPIValue = ["$ref": "#/components/parameters/campus"]
    /// A list's `limit` and `cursor`.
    private static let pageParameters: OpenAPIValue = [
        ["name": "limit", "in": "query", "required": false, "schema": ["type": "integer", "minimum": 1, "maximum": 100, "default": 20]],
        [
            "name": "cursor", "in": "query", "required": false,
            "description": "nextCursor of the previous page, unchanged.", "schema": ["type": "string", "minLength": 1],
        ],
    ]
    private static let journalIDParameter: OpenAPIValue = [
        "name": "id", "in": "path", "required": true, "description": "The entry's id.", "schema": ["type": "string", "format": "uuid"],
    ]

    private static let episodeIDParameter: OpenAPIValue = [
        "name": "id", "in": "path", "required": true, "description": "The episode's id.", "schema": ["type": "string", "format": "uuid"],
    ]

    private static func exportResponse(_ description: String) -> OpenAPIValue {
        [
            "description": .string(description),
            "content": [
                "application/pdf": ["schema": ["type": "string", "format": "binary"]],
                "text/csv": ["schema": ["type": "string"]],
                "application/json": ["schema": ["type": "object"]],
            ],
        ]
    }

    private static func audioResponse(_ description: String) -> OpenAPIValue {
        let binary: OpenAPIValue = ["schema": ["type": "string", "format": "binary"]]
        return [
            "description": .string(description),
            "content": ["audio/webm": binary, "audio/ogg": binary, "audio/mpeg": binary, "audio/mp4": binary, "audio/wav": binary],
        ]
    }
    private static let bearer: OpenAPIValue = [["bearer": []]]
    private static let dateRangeParameters: OpenAPIValue = [
        [
            "name": "from", "in": "query", "required": true, "description": "Not after to.",
            "schema": ["type": "string", "format": "date"],
            "example": "2026-11-01",
        ],
        [
            "name": "to", "in": "query", "required": true, "description": "Not before from; at most 366 days in all.",
            "schema": ["type": "string", "format": "date"], "example": "2026-11-20",
        ],
    ]
    private static let counts: OpenAPIValue = ["type": "object", "additionalProperties": ["type": "integer"]]
    private static let dashboardFigures: OpenAPIValue = [
        "type": "object",
        "required": ["activeMembers", "submitted", "onTime", "late", "missing", "colors", "symptoms", "answers", "complianceRate"],
        "additionalProperties": false,
        "properties": [
            "date": ["type": "string", "format": "date"],
            "activeMembers": ["type": "integer", "description": "Members at the end of the day (of the range, in the total)."],
            "submitted": ["type": "integer"], "onTime": ["type": "integer"], "late": ["type": "integer"],
            "missing": ["type": "integer", "description": "Active members who did not submit (summed over days in the total)."],
            "colors": [
                "type": "object", "required": ["green", "yellow", "red"], "additionalProperties": false,
                "properties": ["green": ["type": "integer"], "yellow": ["type": "integer"], "red": ["type": "integer"]],
            ],
            "symptoms": [
                "type": "object", "additionalProperties": ["type": "integer"],
                "description": "Yes answers per symptom question of the active survey.",
            ],
            "answers": [
                "type": "object", "additionalProperties": counts, "description": "Per question, per answer (\"true\" or a choice option).",
            ],
            "complianceRate": [
                "type": ["number", "null"], "description": "On-time submissions over active members (member-days in the total), 0 to 1.",
            ],
        ],
    ]

    public static let value: OpenAPIValue = document()

    /// The document as one literal, built once at start. Not optimised: the optimiser's
    /// copy-on-write array pass (its cold-block analysis) spent over 20 minutes on this one
    /// function in a release build with Swift 6.3, and nothing here is on a hot path.
    @_optimize(none)
    private static func document() -> OpenAPIValue {
        [
            "openapi": "3.1.0",
            "info": [
                "title": "Campus Attest API",
                "version": "1",
                "description": "Daily health attestation for university campuses. Errors are RFC 9457 problem details.",
            ],
            "paths": [
                "/healthz": [
                    "get": [
                        "summary": "Liveness: the process answers.",
                        "operationId": "healthz",
                        "responses": ["200": json("Alive.", ref("Status"))],
                    ]
                ],
                "/readyz": [
                    "get": [
                        "summary": "Readiness: the database answers.",
                        "operationId": "readyz",
                        "responses": [
                            "200": json("Ready.", ref("Status")),
                            "503": problem("The database cannot be reached."),
                        ],
                    ]
                ],
                "/metrics": [
                    "get": [
                        "summary": "Prometheus metrics of this server (not served here when `attest serve --metrics-port` moves them).",
                        "description":
                            "Requests by method, route template and status, and their latency; submissions by outcome, write batch sizes and times; badge rule failures; notification deliveries; database connections. No label names a campus, a member or an answer.",
                        "operationId": "metrics",
                        "responses": [
                            "200": [
                                "description": "Prometheus text exposition format 0.0.4.",
                                "content": ["text/plain": ["schema": ["type": "string"]]],
                            ]
                        ],
                    ]
                ],
                "/openapi.yaml": [
                    "get": [
                        "summary": "This document.",
                        "operationId": "openapi",
                        "responses": [
                            "200": [
                                "description": "OpenAPI 3.1, YAML.",
                                // Text on the wire; a client that reads YAML gets the document's object.
                                "content": ["application/yaml": ["schema": ["type": ["string", "object"]]]],
                            ]
                        ],
                    ]
                ],
                "/v1/campuses/{campus}/sessions": [
                    "parameters": [campusParameter],
                    "post": [
                        "summary": "Sign in with an OpenID Connect ID token; the first sign-in creates the member.",
                        "operationId": "createSession",
                        "requestBody": [
                            "required": true,
                            "content": ["application/json": ["schema": ref("SignIn")]],
                        ],
                        "responses": [
                            "201": json("Signed in: a session token for this campus.", ref("SessionCreated")),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "408": responseRef("TooSlow"),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": responseRef("Invalid"),
                            "503": problem("The identity provider's keys cannot be fetched right now."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/sessions/nonces": [
                    "parameters": [campusParameter],
                    "post": [
                        "summary": "A nonce for a sign-in the client starts: the ID token must carry it; good once, for ten minutes.",
                        "operationId": "createSignInNonce",
                        "responses": [
                            "201": json("A nonce to send to the identity provider, then with the ID token.", ref("NonceIssued")),
                            "404": responseRef("NotFound"),
                            "429": responseRef("TooManyRequests"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/sessions/current": [
                    "parameters": [campusParameter],
                    "delete": [
                        "summary": "Sign out: revoke the presented session token.",
                        "operationId": "deleteSession",
                        "security": bearer,
                        "responses": [
                            "204": ["description": "Revoked."],
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary": "The signed-in user: profile, roles, today's campus-local date.",
                        "operationId": "getMe",
                        "security": bearer,
                        "responses": [
                            "200": json("The user.", ref("Me")),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/survey": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary": "The active questionnaire, translated as Accept-Language asks when a translation exists.",
                        "operationId": "getSurvey",
                        "security": bearer,
                        "parameters": [["name": "Accept-Language", "in": "header", "required": false, "schema": ["type": "string"]]],
                        "responses": [
                            "200": json("The questionnaire; Content-Language names the language served.", ref("Survey")),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/attestations": [
                    "parameters": [campusParameter],
                    "post": [
                        "summary": "Submit today's answers (once per campus-local day); the badge comes back.",
                        "operationId": "createAttestation",
                        "security": bearer,
                        "parameters": [
                            [
                                "name": "Idempotency-Key", "in": "header", "required": false,
                                "description":
                                    "Retrying with the same key and body returns the original 201; the same key with another body is a 422 naming it. 1 to 200 visible ASCII characters, such as a UUID.",
                                "schema": ["type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[!-~]{1,200}$"],
                                "example": "0b6f2c1e-6c3d-4a51-9a57-3f7d1c2e8a90",
                            ]
                        ],
                        "requestBody": ["required": true, "content": ["application/json": ["schema": ref("AttestationRequest")]]],
                        "responses": [
                            "201": json(
                                "Stored (or, for a repeated Idempotency-Key, the original).", ref("Attestation"),
                                links: [
                                    "badge": ["operationId": "getMyBadge", "description": "The badge the submission made."],
                                    "history": [
                                        "operationId": "listMyAttestations", "description": "The member's attestations, this one first.",
                                    ],
                                ]),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "409": problem(
                                "Already submitted today (the detail names the date and when the next window opens), or the survey version is not the active one."
                            ),
                            "408": responseRef("TooSlow"),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": problem(
                                "Answers that do not fit the questionnaire (each field named), or an Idempotency-Key sent before with another body (type /problems/idempotency-key-reused, the field Idempotency-Key)."
                            ),
                            "503": problem("The database cannot be reached; retry with the same Idempotency-Key."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/attestations": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary": "The member's own attestations, newest first, a page at a time.",
                        "operationId": "listMyAttestations",
                        "security": bearer,
                        "parameters": pageParameters,
                        "responses": [
                            "200": json("A page of attestations.", ref("AttestationPage")),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/badge": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary": "Today's badge with its signed token; gray when nothing was submitted today.",
                        "operationId": "getMyBadge",
                        "security": bearer,
                        "responses": [
                            "200": json(
                                "The badge.", ref("Badge"),
                                links: [
                                    "verify": [
                                        "operationId": "verifyBadge", "requestBody": ["token": "$response.body#/token"],
                                        "description":
                                            "What a door scanner learns from this badge's token (null when gray: nothing to show).",
                                    ]
                                ]),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "503": problem("The campus has no badge-signing key (an operator runs `attest campus rotate-badge-key`)."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/badge-keys": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary": "The campus's public badge-signing keys (JWKS, RFC 7517): the current key and recently retired ones.",
                        "operationId": "getBadgeKeys",
                        "responses": [
                            "200": json("The key set.", ref("KeySet")),
                            "404": responseRef("NotFound"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/badges/verify": [
                    "parameters": [campusParameter],
                    "post": [
                        "summary": "Check a badge token shown at a door: genuine, this campus's, unexpired, and its colour.",
                        "operationId": "verifyBadge",
                        "security": bearer,
                        "requestBody": [
                            "required": true,
                            "content": [
                                "application/json": [
                                    "schema": [
                                        "type": "object", "required": ["token"], "additionalProperties": false,
                                        "properties": ["token": ["type": "string", "minLength": 1]],
                                    ]
                                ]
                            ],
                        ],
                        "responses": [
                            "200": json("Whether the badge is valid; when not, why.", ref("Verification")),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "403": responseRef("Forbidden"),
                            "404": responseRef("NotFound"),
                            "408": responseRef("TooSlow"),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/testing-locations": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary": "Testing locations from every enabled provider, nearest first (by name without a point).",
                        "operationId": "listTestingLocations",
                        "security": bearer,
                        "parameters": [
                            [
                                "name": "lat", "in": "query", "required": false, "description": "Given together with lon, or neither.",
                                "schema": ["type": "number", "minimum": -90, "maximum": 90], "example": 41,
                            ],
                            [
                                "name": "lon", "in": "query", "required": false, "description": "Given together with lat, or neither.",
                                "schema": ["type": "number", "minimum": -180, "maximum": 180], "example": -74,
                            ],
                            [
                                "name": "limit", "in": "query", "required": false,
                                "schema": ["type": "integer", "minimum": 1, "maximum": 100, "default": 20],
                            ],
                        ],
                        "responses": [
                            "200": json("Locations, and the providers that did not answer in time.", ref("TestingLocations")),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/journal": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary": "The member's own journal entries, newest first (by date, then newest written), a page at a time.",
                        "description":
                            "Only the member's own entries: nobody else, administrators and health officers included, can read them.",
                        "operationId": "listMyJournal",
                        "security": bearer,
                        "parameters": pageParameters,
                        "responses": [
                            "200": json("A page of entries.", ref("JournalPage")),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to open entries with."),
                        ],
                    ],
                    "post": [
                        "summary": "Writes a journal entry: title (1–200 characters), text (up to 10,000), date (default today), tags.",
                        "operationId": "createJournalEntry",
                        "security": bearer,
                        "requestBody": ["required": true, "content": ["application/json": ["schema": ref("JournalDraft")]]],
                        "responses": [
                            "201": json("Stored; Location names it.", ref("JournalEntry")),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "408": responseRef("TooSlow"),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to seal entries with."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/journal/{id}": [
                    "parameters": [campusParameter, journalIDParameter],
                    "get": [
                        "summary": "One of the member's own entries.",
                        "operationId": "getMyJournalEntry",
                        "security": bearer,
                        "responses": [
                            "200": json("The entry.", ref("JournalEntry")),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or no such entry of the member's."),
                            "503": problem("The server has no key-encryption key to open entries with."),
                        ],
                    ],
                    "patch": [
                        "summary": "Changes the fields given (date, title, text, tags); the others stay.",
                        "operationId": "updateMyJournalEntry",
                        "security": bearer,
                        "requestBody": ["required": true, "content": ["application/json": ["schema": ref("JournalPatch")]]],
                        "responses": [
                            "200": json("The entry as it is now.", ref("JournalEntry")),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or no such entry of the member's."),
                            "408": responseRef("TooSlow"),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to seal entries with."),
                        ],
                    ],
                    "delete": [
                        "summary": "Deletes the entry and its recording.",
                        "operationId": "deleteMyJournalEntry",
                        "security": bearer,
                        "responses": [
                            "204": ["description": "Deleted."],
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or no such entry of the member's."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/journal/{id}/audio": [
                    "parameters": [campusParameter, journalIDParameter],
                    "put": [
                        "summary": "Stores (or replaces) the entry's one recording: its raw bytes, at most 5 MB, with their Content-Type.",
                        "description":
                            "WebM/Opus, Ogg, MP3, MP4/AAC or WAV. The type is read from the bytes: bytes of another type than the Content-Type names, or of none of these, are a 415.",
                        "operationId": "putMyJournalAudio",
                        "security": bearer,
                        "requestBody": [
                            "required": true,
                            "content": [
                                "audio/webm": ["schema": ["type": "string", "format": "binary"]],
                                "audio/ogg": ["schema": ["type": "string", "format": "binary"]],
                                "audio/mpeg": ["schema": ["type": "string", "format": "binary"]],
                                "audio/mp4": ["schema": ["type": "string", "format": "binary"]],
                                "audio/wav": ["schema": ["type": "string", "format": "binary"]],
                            ],
                        ],
                        "responses": [
                            "204": ["description": "Stored."],
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or no such entry of the member's."),
                            "408": responseRef("TooSlow"),
                            "413": problem("More than 5 MB."),
                            "415": problem("Not a recording of a kept type, or bytes of another type than the Content-Type names."),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to seal recordings with."),
                        ],
                    ],
                    "get": [
                        "summary": "The entry's recording, with its type; a single byte range (Range: bytes=a-b, a-, -n) answers 206.",
                        "operationId": "getMyJournalAudio",
                        "security": bearer,
                        "parameters": [
                            ["name": "Range", "in": "header", "required": false, "schema": ["type": "string"], "example": "bytes=0-1023"]
                        ],
                        "responses": [
                            "200": audioResponse("The whole recording (Accept-Ranges: bytes)."),
                            "206": audioResponse("The range asked for (Content-Range)."),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, entry of the member's, or recording."),
                            "416": problem("The range lies outside the recording (Content-Range: bytes */size)."),
                            "503": problem("The server has no key-encryption key to open recordings with."),
                        ],
                    ],
                    "delete": [
                        "summary": "Removes the entry's recording.",
                        "operationId": "deleteMyJournalAudio",
                        "security": bearer,
                        "responses": [
                            "204": ["description": "Removed."],
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, entry of the member's, or recording."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/episodes": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "The member's own episodes, newest first, a page at a time (episodes open over 72 h are closed first, flagged autoClosed).",
                        "operationId": "listMyEpisodes",
                        "security": bearer,
                        "parameters": pageParameters,
                        "responses": [
                            "200": json("A page of episodes.", ref("EpisodePage")),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to open notes with."),
                        ],
                    ],
                    "post": [
                        "summary":
                            "Starts an episode: kind (headache, migraine or one the campus adds), severity 0–10, notes, startedAt (default now), location (kept to 0.1°).",
                        "description":
                            "With a location and a context provider, the weather there at the start and a day earlier is stored with it; a provider that fails leaves it out. At most one open episode a kind: 409 names the open one.",
                        "operationId": "startEpisode",
                        "security": bearer,
                        "requestBody": ["required": true, "content": ["application/json": ["schema": ref("EpisodeStart")]]],
                        "responses": [
                            "201": json("Started; Location names it.", ref("Episode")),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "408": responseRef("TooSlow"),
                            "409": problem("An episode of this kind is open; the detail names it."),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to seal notes with."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/episodes/summary": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "Count, total and average duration (closed episodes), and per factor the average at the start against the same place and hour a day earlier; in all and by month.",
                        "operationId": "getMyEpisodeSummary",
                        "security": bearer,
                        "parameters": [
                            [
                                "name": "from", "in": "query", "required": false, "description": "Default 29 days before to.",
                                "schema": ["type": "string", "format": "date"],
                            ],
                            [
                                "name": "to", "in": "query", "required": false, "description": "Default today (campus-local).",
                                "schema": ["type": "string", "format": "date"],
                            ],
                        ],
                        "responses": [
                            "200": json("The summary.", ref("EpisodeSummary")),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to open notes with."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/episodes/{id}": [
                    "parameters": [campusParameter, episodeIDParameter],
                    "get": [
                        "summary": "One of the member's own episodes.",
                        "operationId": "getMyEpisode",
                        "security": bearer,
                        "responses": [
                            "200": json("The episode.", ref("Episode")),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or no such episode of the member's."),
                            "503": problem("The server has no key-encryption key to open notes with."),
                        ],
                    ],
                    "patch": [
                        "summary": "Changes the fields given (kind, severity, notes, startedAt, stoppedAt); the place and context stay.",
                        "operationId": "updateMyEpisode",
                        "security": bearer,
                        "requestBody": ["required": true, "content": ["application/json": ["schema": ref("EpisodePatch")]]],
                        "responses": [
                            "200": json("The episode as it is now.", ref("Episode")),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or no such episode of the member's."),
                            "408": responseRef("TooSlow"),
                            "409": problem("Another episode of that kind is open."),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to seal notes with."),
                        ],
                    ],
                    "delete": [
                        "summary": "Deletes the episode.",
                        "operationId": "deleteMyEpisode",
                        "security": bearer,
                        "responses": [
                            "204": ["description": "Deleted."],
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or no such episode of the member's."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/episodes/{id}/stop": [
                    "parameters": [campusParameter, episodeIDParameter],
                    "post": [
                        "summary": "Stops an open episode, now or at stoppedAt (not before its start). The body may be empty.",
                        "operationId": "stopMyEpisode",
                        "security": bearer,
                        "requestBody": ["required": false, "content": ["application/json": ["schema": ref("EpisodeStop")]]],
                        "responses": [
                            "200": json("The stopped episode.", ref("Episode")),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or no such episode of the member's."),
                            "408": responseRef("TooSlow"),
                            "409": problem("The episode is already stopped."),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to open notes with."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/export": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "The member's journal entries and episodes of a range as PDF (default), CSV or JSON; the audit log records that an export happened.",
                        "operationId": "exportMine",
                        "security": bearer,
                        "parameters": [
                            [
                                "name": "from", "in": "query", "required": false, "description": "Default 29 days before to.",
                                "schema": ["type": "string", "format": "date"],
                            ],
                            [
                                "name": "to", "in": "query", "required": false, "description": "Default today; at most 366 days in all.",
                                "schema": ["type": "string", "format": "date"],
                            ],
                            [
                                "name": "format", "in": "query", "required": false,
                                "schema": ["type": "string", "enum": ["pdf", "csv", "json"], "default": "pdf"],
                            ],
                        ],
                        "responses": [
                            "200": exportResponse("The export (Content-Disposition: attachment)."),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                            "503": problem("The server has no key-encryption key to open entries with."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/shares": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "The member's shared links, newest first, each with its status and every opening (the member's own access log).",
                        "operationId": "listMyShares",
                        "security": bearer,
                        "responses": [
                            "200": json("The links.", ref("ShareList")),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                    "post": [
                        "summary":
                            "A read-only link to a date range of the member's journal and episodes for a clinician, living 1 hour to 30 days; the url is shown only here.",
                        "description":
                            "The link carries no personal data: a random token, of which the server keeps only a hash. The audit log records that a share was made.",
                        "operationId": "createShare",
                        "security": bearer,
                        "requestBody": ["required": true, "content": ["application/json": ["schema": ref("ShareRequest")]]],
                        "responses": [
                            "201": json("The link.", ref("ShareCreated")),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "408": responseRef("TooSlow"),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/shares/{id}": [
                    "parameters": [
                        campusParameter,
                        [
                            "name": "id", "in": "path", "required": true, "description": "The link's id.",
                            "schema": ["type": "string", "format": "uuid"],
                        ],
                    ],
                    "delete": [
                        "summary": "Revokes the link at once.",
                        "operationId": "revokeShare",
                        "security": bearer,
                        "responses": [
                            "204": ["description": "Revoked."],
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or no such live link of the member's."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/shared/{token}": [
                    "parameters": [
                        campusParameter,
                        [
                            "name": "token", "in": "path", "required": true, "description": "The link's token.",
                            "schema": ["type": "string"],
                        ],
                    ],
                    "get": [
                        "summary":
                            "What a shared link shows before it is opened: a small page naming whose record it is, its range, until when it works and how many openings are left, with a button per format. It opens nothing and is not recorded (a chat's or mail's link scanner may fetch it); no sign-in.",
                        "operationId": "describeShare",
                        "parameters": [
                            [
                                "name": "format", "in": "query", "required": false, "description": "The format whose button comes first.",
                                "schema": ["type": "string", "enum": ["pdf", "csv", "json"]],
                            ]
                        ],
                        "responses": [
                            "200": ["description": "The page.", "content": ["text/html": ["schema": ["type": "string"]]]],
                            "404": problem(
                                "No such campus, or a link that is unknown here, expired, revoked or whose member left (all alike)."),
                            "422": responseRef("Invalid"),
                            "429": responseRef("TooManyRequests"),
                        ],
                    ],
                    "post": [
                        "summary":
                            "Opens a shared link: the range's journal entries and episodes, PDF by default (inline); no sign-in. Each opening is recorded in the member's access log; a link opens at most 20 times.",
                        "operationId": "openShare",
                        "parameters": [
                            [
                                "name": "format", "in": "query", "required": false,
                                "schema": ["type": "string", "enum": ["pdf", "csv", "json"], "default": "pdf"],
                            ]
                        ],
                        "requestBody": [
                            "required": false,
                            "content": [
                                "application/x-www-form-urlencoded": [
                                    "schema": [
                                        "type": "object", "additionalProperties": false,
                                        "properties": ["format": ["type": "string", "enum": ["pdf", "csv", "json"]]],
                                    ]
                                ]
                            ],
                        ],
                        "responses": [
                            "200": exportResponse("The export (Content-Disposition: inline)."),
                            "400": responseRef("BadRequest"),
                            "404": problem(
                                "No such campus, or a link that is unknown here, expired, revoked or whose member left (all alike)."),
                            "408": responseRef("TooSlow"),
                            "413": responseRef("TooLarge"),
                            "415": problem("The body is not a form (application/x-www-form-urlencoded)."),
                            "422": responseRef("Invalid"),
                            "429": problem(
                                "Too many unknown links from this address (Retry-After), or this link was opened as often as a link may be (type /problems/link-openings-exhausted)."
                            ),
                            "503": problem("The server has no key-encryption key to open entries with."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/me/privacy": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "How long the member keeps their journal and episodes: journalKeepDays, or null for forever (the default).",
                        "operationId": "getMyPrivacy",
                        "security": bearer,
                        "responses": [
                            "200": json("The member's choice.", ref("Privacy")),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                    "put": [
                        "summary":
                            "Sets how long the member keeps their journal and episodes; the daily upkeep deletes what is older (by entry date, episode start). The campus's retention-days does not apply to them.",
                        "operationId": "setMyPrivacy",
                        "security": bearer,
                        "requestBody": ["required": true, "content": ["application/json": ["schema": ref("Privacy")]]],
                        "responses": [
                            "200": json("The member's choice.", ref("Privacy")),
                            "400": responseRef("BadRequest"),
                            "401": responseRef("Unauthorized"),
                            "403": responseRef("OperatorSession"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "408": responseRef("TooSlow"),
                            "413": responseRef("TooLarge"),
                            "415": responseRef("UnsupportedMediaType"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/community": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "The home region's (or another region's) community figures: 7-day average of new cases, per 100,000, trend, risk level and the campus's guidance.",
                        "description":
                            "Rules: the 7-day average counts new cases reported on the 7 dates ending asOf (an unreported date counts 0), over 7, not below 0; per 100,000 needs the region's population; trend compares that week's total with the 7 days before (rising at least 10% higher, falling at least 10% lower, else flat); risk is low below the first of riskThresholds, then medium, high, very-high and severe from each threshold on. Figures that need more reported days than there are are absent. Guidance is in the best language of Accept-Language the campus wrote it in.",
                        "operationId": "getCommunity",
                        "security": bearer,
                        "parameters": [
                            [
                                "name": "region", "in": "query", "required": false,
                                "description":
                                    "A region id of the campus's provider (a county FIPS code, say); the campus's home region when absent.",
                                "schema": ["type": "string", "pattern": "^[A-Za-z0-9._:-]{1,64}$"], "example": "36061",
                            ],
                            ["name": "Accept-Language", "in": "header", "required": false, "schema": ["type": "string"]],
                        ],
                        "responses": [
                            "200": json("The region's figures.", ref("Community")),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem(
                                "No such campus; or the campus shows no community data, has no home region, or its provider has no such region."
                            ),
                            "422": responseRef("Invalid"),
                            "503": problem("The provider did not answer within 2 s and has no earlier copy (Retry-After: 60)."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/community/regions": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "Regions the campus's community-data provider knows whose name contains search (ignoring case), by name.",
                        "operationId": "searchCommunityRegions",
                        "security": bearer,
                        "parameters": [
                            [
                                "name": "search", "in": "query", "required": false, "schema": ["type": "string", "maxLength": 100],
                                "example": "new york",
                            ],
                            [
                                "name": "limit", "in": "query", "required": false,
                                "schema": ["type": "integer", "minimum": 1, "maximum": 100, "default": 20],
                            ],
                        ],
                        "responses": [
                            "200": json("Regions, by name.", ref("CommunityRegions")),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": problem("No such campus, or the campus shows no community data."),
                            "422": responseRef("Invalid"),
                            "503": problem("The provider did not answer within 2 s (Retry-After: 60)."),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/stats": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "Per day: the share of each badge colour and the percentage reporting each symptom; small counts suppressed.",
                        "description":
                            "Any member. A day with fewer attestations than the campus's stats-min-count (default 10) is suppressed whole; within a day, a colour or symptom counted 1 to stats-min-count − 1 times is null.",
                        "operationId": "getStats",
                        "security": bearer,
                        "parameters": dateRangeParameters,
                        "responses": [
                            "200": json("Figures per day, from the daily rollups.", ref("Stats")),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/admin/dashboard": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "Per day and in total: active members, submitted, on time, late, missing, counts per colour, symptom and answer, compliance.",
                        "operationId": "getDashboard",
                        "security": bearer,
                        "parameters": dateRangeParameters,
                        "responses": [
                            "200": json("The dashboard.", ref("Dashboard")),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "403": responseRef("Forbidden"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                ],
                "/v1/campuses/{campus}/admin/follow-ups": [
                    "parameters": [campusParameter],
                    "get": [
                        "summary":
                            "Who had a red or yellow badge on a date, red first, a page at a time: identifiable, for health officers; every read is audited.",
                        "operationId": "listFollowUps",
                        "security": bearer,
                        "parameters": [
                            [
                                "name": "date", "in": "query", "required": true, "schema": ["type": "string", "format": "date"],
                                "example": "2026-11-20",
                            ],
                            [
                                "name": "color", "in": "query", "required": false, "description": "One colour; both when absent.",
                                "schema": ["type": "string", "enum": ["red", "yellow"]],
                            ],
                            [
                                "name": "limit", "in": "query", "required": false,
                                "schema": ["type": "integer", "minimum": 1, "maximum": 1_000, "default": 500],
                            ],
                            [
                                "name": "cursor", "in": "query", "required": false,
                                "description": "nextCursor of the previous page, unchanged.", "schema": ["type": "string", "minLength": 1],
                            ],
                        ],
                        "responses": [
                            "200": json("The list.", ref("FollowUps")),
                            "401": responseRef("Unauthorized"),
                            "429": responseRef("TooManyRequests"),
                            "403": responseRef("Forbidden"),
                            "404": responseRef("NotFound"),
                            "422": responseRef("Invalid"),
                        ],
                    ],
                ],
            ],
            "components": [
                "securitySchemes": [
                    "bearer": [
                        "type": "http", "scheme": "bearer", "description": "A session token from POST …/sessions or `attest token issue`.",
                    ]
                ],
                "parameters": [
                    "campus": [
                        "name": "campus", "in": "path", "required": true, "description": "The campus slug.",
                        "schema": ["type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,38}[a-z0-9]$"],
                    ]
                ],
                "responses": [
                    "BadRequest": problem("The body is not a JSON object."),
                    "Unauthorized": problem("No token, or one not valid at this campus (WWW-Authenticate: Bearer)."),
                    "Forbidden": problem("Signed in, but without the role this needs."),
                    "OperatorSession": problem(
                        "The session was minted by an operator (`attest token issue`), not signed in to by the member: it opens none of the member's private data (type /problems/operator-session)."
                    ),
                    "NotFound": problem("No such campus (or resource)."),
                    "TooLarge": problem("The body is larger than the server accepts."),
                    "TooSlow": problem("The body did not arrive within 10 s; the connection is closed. Send it again, all at once."),
                    "UnsupportedMediaType": problem("The body is not application/json."),
                    "Invalid": problem("Fields that are missing or wrong, each named in errors[]."),
                    "TooManyRequests": problem(
                        "Too many sign-in attempts, or requests with unknown tokens, from this address or at this campus; Retry-After says when to try again."
                    ),
                ],
                "schemas": [
                    "Stats": [
                        "type": "object", "required": ["from", "to", "minCount", "days"], "additionalProperties": false,
                        "properties": [
                            "from": ["type": "string", "format": "date"], "to": ["type": "string", "format": "date"],
                            "minCount": ["type": "integer", "description": "Counts below it are suppressed."],
                            "days": [
                                "type": "array",
                                "items": [
                                    "type": "object", "required": ["date", "suppressed", "submitted", "colors", "symptoms"],
                                    "additionalProperties": false,
                                    "properties": [
                                        "date": ["type": "string", "format": "date"],
                                        "suppressed": [
                                            "type": "boolean", "description": "Too few attestations that day to show anything.",
                                        ],
                                        "submitted": ["type": ["integer", "null"]],
                                        "colors": [
                                            "type": "object", "required": ["green", "yellow", "red"], "additionalProperties": false,
                                            "properties": [
                                                "green": ["type": ["number", "null"]], "yellow": ["type": ["number", "null"]],
                                                "red": ["type": ["number", "null"]],
                                            ],
                                            "description": "Percent of the day's attestations.",
                                        ],
                                        "symptoms": [
                                            "type": "object", "additionalProperties": ["type": ["number", "null"]],
                                            "description": "Percent reporting each symptom of the active survey.",
                                        ],
                                    ],
                                ],
                            ],
                        ],
                    ],
                    "Dashboard": [
                        "type": "object", "required": ["from", "to", "days", "total"], "additionalProperties": false,
                        "properties": [
                            "from": ["type": "string", "format": "date"], "to": ["type": "string", "format": "date"],
                            "days": ["type": "array", "items": dashboardFigures],
                            "total": dashboardFigures,
                        ],
                    ],
                    "FollowUps": [
                        "type": "object", "required": ["date", "colors", "items", "nextCursor"], "additionalProperties": false,
                        "properties": [
                            "date": ["type": "string", "format": "date"],
                            "nextCursor": [
                                "type": ["string", "null"], "description": "Pass as cursor for the next page; null on the last page.",
                            ],
                            "colors": ["type": "array", "items": ["type": "string", "enum": ["red", "yellow"]]],
                            "items": [
                                "type": "array",
                                "items": [
                                    "type": "object", "required": ["userId", "name", "email", "color", "reason", "submittedAt", "onTime"],
                                    "additionalProperties": false,
                                    "properties": [
                                        "userId": ["type": "string", "format": "uuid"], "name": ["type": "string"],
                                        "email": ["type": "string"],
                                        "color": ["type": "string", "enum": ["red", "yellow"]], "reason": ["type": "string"],
                                        "submittedAt": ["type": "string", "format": "date-time"], "onTime": ["type": "boolean"],
                                    ],
                                ],
                            ],
                        ],
                    ],
                    "Problem": [
                        "type": "object",
                        "required": ["type", "title", "status", "detail"],
                        "additionalProperties": false,
                        "properties": [
                            "type": ["type": "string"],
                            "title": ["type": "string"],
                            "status": ["type": "integer"],
                            "detail": ["type": "string"],
                            "errors": [
                                "type": "array",
                                "items": [
                                    "type": "object", "required": ["field", "message"], "additionalProperties": false,
                                    "properties": ["field": ["type": "string"], "message": ["type": "string"]],
                                ],
                            ],
                        ],
                    ],
                    "Status": [
                        "type": "object", "required": ["status"], "additionalProperties": false,
                        "properties": ["status": ["type": "string", "enum": ["ok", "ready"]]],
                    ],
                    "SignIn": [
                        "type": "object", "required": ["idToken"],
                        "properties": [
                            "idToken": ["type": "string", "minLength": 1, "description": "An OpenID Connect ID token (JWT), used once."],
                            "nonce": [
                                "type": "string", "pattern": "^[A-Za-z0-9_-]{43}$",
                                "description":
                                    "The nonce of POST …/sessions/nonces the sign-in was started with; the ID token must carry it.",
                            ],
                        ],
                    ],
                    "NonceIssued": [
                        "type": "object", "required": ["nonce", "expiresAt"], "additionalProperties": false,
                        "properties": ["nonce": ["type": "string"], "expiresAt": ["type": "string", "format": "date-time"]],
                    ],
                    "User": [
                        "type": "object", "required": ["id", "email", "displayName", "roles"], "additionalProperties": false,
                        "properties": [
                            "id": ["type": "string", "format": "uuid"],
                            "email": ["type": "string"],
                            "displayName": ["type": "string"],
                            "roles": ["type": "array", "items": ref("Role")],
                        ],
                    ],
                    "Role": ["type": "string", "enum": ["member", "screener", "health_officer", "admin"]],
                    "AttestationRequest": [
                        "type": "object", "required": ["surveyVersion", "answers"], "additionalProperties": false,
                        "properties": [
                            "surveyVersion": ["type": "integer", "minimum": 1, "maximum": 999_999_999],
                            "answers": ["type": "object", "description": "Answers by question id: true/false, numbers, option ids, text."],
                        ],
                    ],
                    "Attestation": [
                        "type": "object", "required": ["id", "date", "submittedAt", "onTime", "surveyVersion", "badge"],
                        "additionalProperties": false,
                        "properties": [
                            "id": ["type": "string", "format": "uuid"],
                            "date": ["type": "string", "format": "date", "description": "The campus-local date attested."],
                            "submittedAt": ["type": "string", "format": "date-time"],
                            "onTime": ["type": "boolean", "description": "Submitted before the campus's daily deadline."],
                            "surveyVersion": ["type": "integer"],
                            "badge": ref("AttestationBadge"),
                        ],
                    ],
                    "AttestationPage": [
                        "type": "object", "required": ["items", "nextCursor"], "additionalProperties": false,
                        "properties": [
                            "items": [
                                "type": "array",
                                "items": [
                                    "type": "object",
                                    "required": ["id", "date", "submittedAt", "onTime", "surveyVersion", "badge", "answers"],
                                    "additionalProperties": false,
                                    "properties": [
                                        "id": ["type": "string", "format": "uuid"],
                                        "date": ["type": "string", "format": "date"],
                                        "submittedAt": ["type": "string", "format": "date-time"],
                                        "onTime": ["type": "boolean"],
                                        "surveyVersion": ["type": "integer"],
                                        "badge": ref("AttestationBadge"),
                                        "answers": [
                                            "type": ["object", "null"], "description": "null once removed by the retention purge.",
                                        ],
                                    ],
                                ],
                            ],
                            "nextCursor": [
                                "type": ["string", "null"], "description": "Pass as cursor for older ones; null on the last page.",
                            ],
                        ],
                    ],
                    "AttestationBadge": [
                        "type": "object", "required": ["color", "reason", "validUntil"], "additionalProperties": false,
                        "properties": [
                            "color": ["type": "string", "enum": ["green", "yellow", "red"]],
                            "reason": ["type": "string"],
                            "validUntil": ["type": "string", "format": "date-time"],
                        ],
                    ],
                    "Badge": [
                        "type": "object", "required": ["color", "date", "validUntil", "reason", "token"], "additionalProperties": false,
                        "properties": [
                            "color": ["type": "string", "enum": ["green", "yellow", "red", "gray"]],
                            "date": ["type": "string", "format": "date", "description": "The campus-local date."],
                            "validUntil": ["type": "string", "format": "date-time"],
                            "reason": ["type": "string"],
                            "token": [
                                "type": "string",
                                "description":
                                    "Compact JWS (ES256) of {campus, sub (a pseudonym), date, color, iat, exp}; verify against badge-keys.",
                            ],
                        ],
                    ],
                    "KeySet": [
                        "type": "object", "required": ["keys"], "additionalProperties": false,
                        "properties": [
                            "keys": [
                                "type": "array",
                                "items": [
                                    "type": "object", "required": ["kty", "crv", "alg", "use", "kid", "x", "y"],
                                    "additionalProperties": false,
                                    "properties": [
                                        "kty": ["type": "string", "enum": ["EC"]], "crv": ["type": "string", "enum": ["P-256"]],
                                        "alg": ["type": "string", "enum": ["ES256"]], "use": ["type": "string", "enum": ["sig"]],
                                        "kid": ["type": "string"], "x": ["type": "string"], "y": ["type": "string"],
                                    ],
                                ],
                            ]
                        ],
                    ],
                    "Verification": [
                        "type": "object", "required": ["valid"], "additionalProperties": false,
                        "properties": [
                            "valid": ["type": "boolean"],
                            "color": ["type": "string", "enum": ["green", "yellow", "red", "gray"]],
                            "date": ["type": "string", "format": "date"],
                            "validUntil": ["type": "string", "format": "date-time"],
                            "reason": [
                                "type": "string", "enum": ["malformed", "other-campus", "unknown-key", "bad-signature", "expired"],
                            ],
                            "detail": ["type": "string"],
                        ],
                    ],
                    "TestingLocations": [
                        "type": "object", "required": ["locations", "unavailable"], "additionalProperties": false,
                        "properties": [
                            "locations": [
                                "type": "array",
                                "items": [
                                    "type": "object",
                                    "required": ["name", "address", "lat", "lon", "hours", "phone", "url", "notes", "provider", "stale"],
                                    "additionalProperties": false,
                                    "properties": [
                                        "name": ["type": "string"], "address": ["type": "string"],
                                        "lat": ["type": "number"], "lon": ["type": "number"],
                                        "hours": ["type": "string"], "phone": ["type": "string"], "url": ["type": "string"],
                                        "notes": ["type": "string"],
                                        "distanceKm": ["type": "number", "description": "Great-circle distance from lat/lon, when given."],
                                        "provider": ["type": "string"],
                                        "stale": [
                                            "type": "boolean", "description": "An older copy kept while the provider's source is down.",
                                        ],
                                    ],
                                ],
                            ],
                            "unavailable": [
                                "type": "array", "items": ["type": "string"], "description": "Providers that failed or timed out.",
                            ],
                        ],
                    ],
                    "JournalDraft": [
                        "type": "object", "required": ["title"], "additionalProperties": false,
                        "properties": [
                            "date": [
                                "type": "string", "format": "date",
                                "description": "From 2000-01-01 to tomorrow; today (campus-local) when absent.",
                            ],
                            "title": ["type": "string", "minLength": 1, "maxLength": 200],
                            "text": [
                                "type": "string", "maxLength": 10000,
                                "description": "The body may then be up to 256 KiB (escaped characters are longer).",
                            ],
                            "tags": ["type": "array", "uniqueItems": true, "items": ref("JournalTag")],
                        ],
                    ],
                    "JournalPatch": [
                        "type": "object", "additionalProperties": false,
                        "properties": [
                            "date": ["type": "string", "format": "date"],
                            "title": ["type": "string", "minLength": 1, "maxLength": 200],
                            "text": ["type": "string", "maxLength": 10000],
                            "tags": ["type": "array", "uniqueItems": true, "items": ref("JournalTag")],
                        ],
                    ],
                    "JournalTag": ["type": "string", "enum": ["symptom", "treatment", "quarantine", "contact", "place"]],
                    "JournalEntry": [
                        "type": "object", "required": ["id", "date", "title", "text", "tags", "audio", "createdAt", "updatedAt"],
                        "additionalProperties": false,
                        "properties": [
                            "id": ["type": "string", "format": "uuid"],
                            "date": ["type": "string", "format": "date"],
                            "title": ["type": "string"],
                            "text": ["type": "string"],
                            "tags": ["type": "array", "items": ref("JournalTag")],
                            "audio": [
                                "type": ["object", "null"], "required": ["type", "size", "url"], "additionalProperties": false,
                                "properties": [
                                    "type": [
                                        "type": "string", "enum": ["audio/webm", "audio/ogg", "audio/mpeg", "audio/mp4", "audio/wav"],
                                    ],
                                    "size": ["type": "integer"], "url": ["type": "string"],
                                ],
                            ],
                            "createdAt": ["type": "string", "format": "date-time"],
                            "updatedAt": ["type": "string", "format": "date-time"],
                        ],
                    ],
                    "JournalPage": [
                        "type": "object", "required": ["items", "nextCursor"], "additionalProperties": false,
                        "properties": [
                            "items": ["type": "array", "items": ref("JournalEntry")],
                            "nextCursor": [
                                "type": ["string", "null"], "description": "Pass as cursor for older entries; null on the last page.",
                            ],
                        ],
                    ],
                    "EpisodeStart": [
                        "type": "object", "required": ["kind", "severity"], "additionalProperties": false,
                        "properties": [
                            "kind": [
                                "type": "string", "description": "headache, migraine, or a kind in the campus's settings (episodeKinds).",
                            ],
                            "severity": ["type": "integer", "minimum": 0, "maximum": 10],
                            "notes": ["type": "string", "maxLength": 2000],
                            "startedAt": [
                                "type": "string", "format": "date-time",
                                "description": "Not in the future, within the last year; now when absent.",
                            ],
                            "location": [
                                "type": ["object", "null"], "required": ["lat", "lon"], "additionalProperties": false,
                                "properties": [
                                    "lat": ["type": "number", "minimum": -90, "maximum": 90],
                                    "lon": ["type": "number", "minimum": -180, "maximum": 180],
                                ],
                            ],
                        ],
                    ],
                    "EpisodePatch": [
                        "type": "object", "additionalProperties": false,
                        "properties": [
                            "kind": ["type": "string"], "severity": ["type": "integer", "minimum": 0, "maximum": 10],
                            "notes": ["type": "string", "maxLength": 2000],
                            "startedAt": ["type": "string", "format": "date-time"], "stoppedAt": ["type": "string", "format": "date-time"],
                        ],
                    ],
                    "EpisodeStop": [
                        "type": "object", "additionalProperties": false,
                        "properties": ["stoppedAt": ["type": "string", "format": "date-time", "description": "Now when absent."]],
                    ],
                    "EnvironmentFactor": [
                        "type": "object", "required": ["factor", "value", "unit"], "additionalProperties": false,
                        "properties": [
                            "factor": ["type": "string", "enum": ["temperature", "uvIndex", "humidity", "windSpeed", "airQuality"]],
                            "value": ["type": "number"], "unit": ["type": "string", "enum": ["°C", "index", "%", "m/s", "AQI"]],
                        ],
                    ],
                    "Episode": [
                        "type": "object",
                        "required": [
                            "id", "kind", "severity", "notes", "startedAt", "stoppedAt", "durationMinutes", "autoClosed", "location",
                            "context", "baseline", "createdAt", "updatedAt",
                        ],
                        "additionalProperties": false,
                        "properties": [
                            "id": ["type": "string", "format": "uuid"], "kind": ["type": "string"], "severity": ["type": "integer"],
                            "notes": ["type": "string"], "startedAt": ["type": "string", "format": "date-time"],
                            "stoppedAt": ["type": ["string", "null"], "format": "date-time"],
                            "durationMinutes": ["type": ["integer", "null"]],
                            "autoClosed": ["type": "boolean", "description": "Closed by the platform 72 h after its start."],
                            "location": [
                                "type": ["object", "null"], "required": ["lat", "lon"], "additionalProperties": false,
                                "properties": ["lat": ["type": "number"], "lon": ["type": "number"]],
                            ],
                            "context": ["type": ["array", "null"], "items": ref("EnvironmentFactor"), "description": "At the start."],
                            "baseline": [
                                "type": ["array", "null"], "items": ref("EnvironmentFactor"),
                                "description": "The same place and hour a day earlier.",
                            ],
                            "createdAt": ["type": "string", "format": "date-time"], "updatedAt": ["type": "string", "format": "date-time"],
                        ],
                    ],
                    "EpisodePage": [
                        "type": "object", "required": ["items", "nextCursor"], "additionalProperties": false,
                        "properties": ["items": ["type": "array", "items": ref("Episode")], "nextCursor": ["type": ["string", "null"]]],
                    ],
                    "EpisodeSummaryPart": [
                        "type": "object", "required": ["count", "closed", "totalMinutes", "averageMinutes", "factors"],
                        "additionalProperties": false,
                        "properties": [
                            "month": ["type": "string", "description": "YYYY-MM (campus-local start); absent in total."],
                            "count": ["type": "integer"], "closed": ["type": "integer"], "totalMinutes": ["type": "integer"],
                            "averageMinutes": ["type": ["number", "null"]],
                            "factors": [
                                "type": "array",
                                "items": [
                                    "type": "object", "required": ["factor", "unit", "during", "baseline"], "additionalProperties": false,
                                    "properties": [
                                        "factor": ["type": "string"], "unit": ["type": "string"],
                                        "during": ["type": ["number", "null"]], "baseline": ["type": ["number", "null"]],
                                    ],
                                ],
                            ],
                        ],
                    ],
                    "EpisodeSummary": [
                        "type": "object", "required": ["from", "to", "total", "months"], "additionalProperties": false,
                        "properties": [
                            "from": ["type": "string", "format": "date"], "to": ["type": "string", "format": "date"],
                            "total": ref("EpisodeSummaryPart"), "months": ["type": "array", "items": ref("EpisodeSummaryPart")],
                        ],
                    ],
                    "ShareRequest": [
                        "type": "object", "required": ["expiresIn", "from", "to"], "additionalProperties": false,
                        "properties": [
                            "expiresIn": ["type": "integer", "minimum": 3600, "maximum": 2592000, "description": "Seconds."],
                            "from": ["type": "string", "format": "date"],
                            "to": ["type": "string", "format": "date", "description": "Not before from; at most 366 days in all."],
                        ],
                    ],
                    "ShareCreated": [
                        "type": "object", "required": ["id", "url", "expiresAt", "from", "to"], "additionalProperties": false,
                        "properties": [
                            "id": ["type": "string", "format": "uuid"],
                            "url": ["type": "string", "description": "A path on this server: /v1/campuses/{campus}/shared/{token}."],
                            "expiresAt": ["type": "string", "format": "date-time"],
                            "from": ["type": "string", "format": "date"], "to": ["type": "string", "format": "date"],
                        ],
                    ],
                    "ShareList": [
                        "type": "object", "required": ["items"], "additionalProperties": false,
                        "properties": [
                            "items": [
                                "type": "array",
                                "items": [
                                    "type": "object",
                                    "required": ["id", "from", "to", "status", "expiresAt", "revokedAt", "createdAt", "openings"],
                                    "additionalProperties": false,
                                    "properties": [
                                        "id": ["type": "string", "format": "uuid"],
                                        "from": ["type": "string", "format": "date"], "to": ["type": "string", "format": "date"],
                                        "status": ["type": "string", "enum": ["active", "expired", "revoked"]],
                                        "expiresAt": ["type": "string", "format": "date-time"],
                                        "revokedAt": ["type": ["string", "null"], "format": "date-time"],
                                        "createdAt": ["type": "string", "format": "date-time"],
                                        "openings": [
                                            "type": "array",
                                            "items": [
                                                "type": "object", "required": ["openedAt", "format"], "additionalProperties": false,
                                                "properties": [
                                                    "openedAt": ["type": "string", "format": "date-time"], "format": ["type": "string"],
                                                ],
                                            ],
                                        ],
                                    ],
                                ],
                            ]
                        ],
                    ],
                    "Privacy": [
                        "type": "object", "required": ["journalKeepDays"], "additionalProperties": false,
                        "properties": [
                            "journalKeepDays": [
                                "type": ["integer", "null"], "minimum": 1, "maximum": 3650, "description": "Days; null keeps them forever.",
                            ]
                        ],
                    ],
                    "CommunityRegion": [
                        "type": "object", "required": ["id", "name"], "additionalProperties": false,
                        "properties": [
                            "id": ["type": "string"], "name": ["type": "string"],
                            "population": ["type": "integer", "description": "Absent when the provider does not know it."],
                        ],
                    ],
                    "CommunityRegions": [
                        "type": "object", "required": ["regions", "source"], "additionalProperties": false,
                        "properties": ["regions": ["type": "array", "items": ref("CommunityRegion")], "source": ["type": "string"]],
                    ],
                    "Community": [
                        "type": "object",
                        "required": ["region", "home", "riskThresholds", "source", "stale", "days"], "additionalProperties": false,
                        "properties": [
                            "region": ref("CommunityRegion"),
                            "home": ["type": "boolean", "description": "Whether it is the campus's home region."],
                            "asOf": ["type": "string", "format": "date", "description": "The latest reported date."],
                            "newCases7DayAverage": ["type": "number"],
                            "newCases7DayAveragePer100k": ["type": "number"],
                            "trend": ["type": "string", "enum": ["rising", "falling", "flat"]],
                            "risk": ["type": "string", "enum": ["low", "medium", "high", "very-high", "severe"]],
                            "guidance": ["type": "string", "description": "The campus's guidance for this risk level, when it wrote one."],
                            "riskThresholds": ["type": "array", "items": ["type": "number"], "minItems": 4, "maxItems": 4],
                            "source": ["type": "string", "description": "The provider's id."],
                            "attribution": ["type": "string", "description": "Who published the figures, when the provider says."],
                            "stale": ["type": "boolean", "description": "An older copy kept while the provider's source is down."],
                            "days": [
                                "type": "array", "description": "The latest 28 reported days, oldest first.",
                                "items": [
                                    "type": "object", "required": ["date", "newCases", "newDeaths"], "additionalProperties": false,
                                    "properties": [
                                        "date": ["type": "string", "format": "date"], "newCases": ["type": "integer"],
                                        "newDeaths": ["type": "integer"], "tests": ["type": "integer"], "admissions": ["type": "integer"],
                                    ],
                                ],
                            ],
                        ],
                    ],
                    "Survey": [
                        "type": "object", "required": ["version", "title", "questions"], "additionalProperties": false,
                        "properties": [
                            "version": ["type": "integer", "description": "Send it back as surveyVersion."],
                            "title": ["type": "string"],
                            "language": ["type": ["string", "null"], "description": "The translation served; absent for the original."],
                            "questions": ["type": "array", "items": ref("Question")],
                        ],
                    ],
                    "Question": [
                        "type": "object", "required": ["id", "kind", "required", "prompt"], "additionalProperties": false,
                        "properties": [
                            "id": ["type": "string"],
                            "kind": ["type": "string", "enum": ["boolean", "number", "choice", "text"]],
                            "required": ["type": "boolean"],
                            "prompt": ["type": "string"],
                            "translations": ["type": "object"],
                            "symptom": ["type": "boolean", "description": "A yes counts as a symptom in statistics."],
                            "min": ["type": "number"],
                            "max": ["type": "number"],
                            "unit": ["type": "string"],
                            "options": ["type": "array", "items": ["type": "string"]],
                            "maxLength": ["type": "integer"],
                        ],
                    ],
                    "SessionCreated": [
                        "type": "object", "required": ["token", "expiresAt", "user"], "additionalProperties": false,
                        "properties": [
                            "token": ["type": "string", "description": "Opaque; send as Authorization: Bearer."],
                            "expiresAt": ["type": "string", "format": "date-time"],
                            "user": ref("User"),
                        ],
                    ],
                    "Me": [
                        "type": "object", "required": ["id", "email", "displayName", "roles", "campus", "today"],
                        "additionalProperties": false,
                        "properties": [
                            "id": ["type": "string", "format": "uuid"],
                            "email": ["type": "string"],
                            "displayName": ["type": "string"],
                            "roles": ["type": "array", "items": ref("Role")],
                            "campus": [
                                "type": "object", "required": ["slug", "name", "timeZone"], "additionalProperties": false,
                                "properties": ["slug": ["type": "string"], "name": ["type": "string"], "timeZone": ["type": "string"]],
                            ],
                            "today": ["type": "string", "format": "date", "description": "The campus-local date now."],
                        ],
                    ],
                ],
            ],
        ]
    }
}
