// attest-bench-reference: a bare Hummingbird JSON route, the yardstick DESIGN.md §8 measures
// badge reads against. Same Hummingbird, same defaults as `attest serve`, nothing else:
// no middleware, no database.
//
//   attest-bench-reference [PORT]      GET /json answers {"status":"ok"}
import Hummingbird

struct Status: ResponseEncodable {
    var status: String
}

let port = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 18463
let router = Router()
router.get("json") { _, _ in Status(status: "ok") }
let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
try await app.runService()
