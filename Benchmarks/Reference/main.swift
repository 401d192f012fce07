// attest-bench-reference: bare Hummingbird JSON routes, the yardsticks DESIGN.md §8 measures
// badge reads and submissions against. Same Hummingbird, same defaults as `attest serve`,
// nothing else: no middleware, no database.
//
//   attest-bench-reference [PORT]
//   GET  /json   answers {"status":"ok"}
//   POST /json   decodes a submission-shaped JSON body with Foundation's JSONDecoder (as a
//                plain Hummingbird route does) and answers 201 {"status":"ok","answers":N}
import Hummingbird

struct Status: ResponseEncodable {
    var status: String
    var answers: Int?
}

/// What `Benchmarks/load.lua` posts: a survey version and answers that are booleans or numbers.
struct Submission: Decodable {
    enum Answer: Decodable {
        case bool(Bool)
        case number(Double)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else {
                self = .number(try container.decode(Double.self))
            }
        }
    }

    var surveyVersion: Int
    var answers: [String: Answer]
}

let port = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 18463
let router = Router()
router.get("json") { _, _ in Status(status: "ok") }
router.post("json") { request, context -> EditedResponse<Status> in
    let submission = try await request.decode(as: Submission.self, context: context)
    return EditedResponse(status: .created, response: Status(status: "ok", answers: submission.answers.count))
}
let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
try await app.runService()
