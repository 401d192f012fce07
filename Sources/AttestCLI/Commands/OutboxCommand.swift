import ArgumentParser
import Foundation
import Notifications
import Tenancy

struct OutboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox", abstract: "See and retry a campus's undelivered notifications.",
        subcommands: [List.self, Dead.self, Retry.self])
}

extension OutboxCommand {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Events not delivered yet (newest first), or --delivered ones.")
        @Argument var campus: String
        @Flag(help: "Delivered events instead.") var delivered = false
        @Option(help: "At most this many.") var limit = 100
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            try await OutboxCommand.show(
                campus: campus, state: delivered ? .delivered : .pending, limit: limit, json: json, database: database, logging: logging)
        }
    }

    struct Dead: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Dead letters: events a sink refused or that failed past their maximum age.",
            discussion: "Kept 30 days (or the campus's retention-days, if fewer) for `attest outbox retry`; delivered events 7.")
        @Argument var campus: String
        @Option(help: "At most this many.") var limit = 100
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            try await OutboxCommand.show(campus: campus, state: .dead, limit: limit, json: json, database: database, logging: logging)
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put dead letters (all, or one event's) back in line, with a fresh delivery window.")
        @Argument var campus: String
        @Option(help: "Only this event id.") var event: String?
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            var id: UUID?
            if let event {
                guard let parsed = UUID(uuidString: event) else {
                    throw CLIError("--event \(event) is not an event id (a UUID from `attest outbox dead`)")
                }
                id = parsed
            }
            let count = try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                return try await OutboxStore(client: context.client).retry(campus: found.id, event: id)
            }
            say(
                count == 0
                    ? "No dead letters to retry at \(campus)." : "Retrying \(count) dead letter\(count == 1 ? "" : "s") at \(campus).")
        }
    }

    static func show(
        campus: String, state: OutboxStore.State, limit: Int, json: Bool, database: DatabaseOptions, logging: LoggingOptions
    ) async throws {
        guard (1...10_000).contains(limit) else { throw CLIError("--limit must be between 1 and 10000") }
        let entries = try await TenantContext.run(database: database, logging: logging) { context in
            let found = try await context.campuses.require(slug: campus)
            return try await OutboxStore(client: context.client).list(campus: found.id, state: state, limit: limit)
        }
        if json {
            return printJSONObject(
                entries.map { entry -> [String: Any] in
                    var object: [String: Any] = [
                        "id": entry.id.lowercasedText, "sink": entry.sink, "event": entry.event, "attempts": entry.attempts,
                        "createdAt": entry.createdAt.ISO8601Format(), "nextAttemptAt": entry.nextAttemptAt.ISO8601Format(),
                    ]
                    object["deliveredAt"] = entry.deliveredAt?.ISO8601Format()
                    object["deadAt"] = entry.deadAt?.ISO8601Format()
                    object["lastError"] = entry.lastError
                    return object
                })
        }
        if entries.isEmpty { return say("No \(state.rawValue) notifications at \(campus).") }
        for entry in entries {
            var line =
                "\(entry.createdAt.ISO8601Format())  \(entry.event)  \(entry.sink)  \(entry.id.lowercasedText)  attempts \(entry.attempts)"
            if let error = entry.lastError { line += "  last error: \(error)" }
            say(line)
        }
    }
}
