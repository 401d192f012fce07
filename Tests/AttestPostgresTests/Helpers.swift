import AttestPostgres
import AttestTestSupport
import Foundation

/// Runs `body` with a client on a fresh, empty database (as the cluster superuser).
func withFreshDatabase(
    maxConnections: Int = 4, leaseTimeout: Duration = .seconds(10), settingsStyle: TransactionSettings.Style = .automatic,
    _ body: (PostgresClient) async throws -> Void
) async throws {
    let name = try await TestDatabase.create(migrated: false)
    let client = TestDatabase.client(
        database: name, role: nil, maxConnections: maxConnections, leaseTimeout: leaseTimeout, settingsStyle: settingsStyle)
    do {
        try await body(client)
        await client.shutdown()
    } catch {
        await client.shutdown()
        throw error
    }
}

/// Selects `value` back as a bound parameter and decodes the single column.
func roundTrip<T: PostgresEncodable & PostgresDecodable>(_ value: T, _ client: PostgresClient) async throws -> T {
    let rows = try await client.query("SELECT \(value) AS value")
    return try rows[0].decode("value", as: T.self)
}
