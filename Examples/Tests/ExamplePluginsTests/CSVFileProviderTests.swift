import AttestPlugins
import ExamplePlugins
import Foundation
import Logging
import Testing

@Suite struct CSVFileProviderTests {
    let directory = FileManager.default.temporaryDirectory.appending(path: "csv-file-\(UUID().uuidString.prefix(8))")
    var file: URL { directory.appending(path: "locations.csv") }
    let context = PluginContext(http: NoHTTP(), logger: Logger(label: "csv-file-test"))

    init() throws { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }

    /// Writes the file and stamps it with a distinct modification time (file systems keep
    /// coarse times; two writes in one second must still look different).
    func write(_ text: String, modified: Date) throws {
        try Data(text.utf8).write(to: file)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: file.path)
    }

    @Test func readsTheFileAndRereadsItWhenItChanges() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write("name,lat,lon,address\nNorth Clinic,40.81,-73.96,\"116th St, New York\"\n", modified: Date(timeIntervalSince1970: 1_000))
        let provider = try CSVFileProvider(settings: .object(["path": .string(file.path)]))
        let first = try await provider.locations(context: context)
        #expect(first.stale == false)
        #expect(first.locations.map(\.name) == ["North Clinic"])
        #expect(first.locations.first?.address == "116th St, New York")

        try write("name,lat,lon\nNorth Clinic,40.81,-73.96\nSouth Clinic,40.70,-74.01\n", modified: Date(timeIntervalSince1970: 2_000))
        let second = try await provider.locations(context: context)
        #expect(second.locations.map(\.name) == ["North Clinic", "South Clinic"])
        #expect(second.stale == false)
    }

    @Test func aBrokenOrMissingFileServesTheLastGoodCopyMarkedStale() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write("name,lat,lon\nNorth Clinic,40.81,-73.96\n", modified: Date(timeIntervalSince1970: 1_000))
        let provider = try CSVFileProvider(settings: .object(["path": .string(file.path)]))
        _ = try await provider.locations(context: context)

        try write("name,lat,lon\nNorth Clinic,north,-73.96\n", modified: Date(timeIntervalSince1970: 2_000))
        let broken = try await provider.locations(context: context)
        #expect(broken.stale)
        #expect(broken.locations.map(\.name) == ["North Clinic"])

        try FileManager.default.removeItem(at: file)
        let missing = try await provider.locations(context: context)
        #expect(missing.stale)
        #expect(missing.locations.count == 1)

        // Fixed again: fresh, not stale.
        try write("name,lat,lon\nWest Clinic,40.75,-74.00\n", modified: Date(timeIntervalSince1970: 3_000))
        let fixed = try await provider.locations(context: context)
        #expect(fixed.stale == false)
        #expect(fixed.locations.map(\.name) == ["West Clinic"])
    }

    @Test func withoutAnyGoodCopyItThrowsNamingTheLine() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let provider = try CSVFileProvider(settings: .object(["path": .string(file.path)]))
        await #expect(throws: CSVFileError.self) { try await provider.locations(context: context) }
        try write("name,lat,lon\nA,1,2\nB,95,2\n", modified: Date(timeIntervalSince1970: 1_000))
        do {
            _ = try await provider.locations(context: context)
            Issue.record("a latitude of 95 was accepted")
        } catch {
            #expect("\(error)".contains("line 3: lat must be between -90 and 90"))
        }
    }

    @Test func thePathMustBeAbsolute() {
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(throws: PluginSettingsError.self) { try CSVFileProvider(settings: .object(["path": .string("locations.csv")])) }
        #expect(throws: PluginSettingsError.self) { try CSVFileProvider(settings: .object([:])) }
    }
}

/// The provider reads a file; it must not touch the network.
struct NoHTTP: PluginHTTPClient {
    func send(_ request: PluginHTTPRequest) async throws -> PluginHTTPResponse {
        Issue.record("the csv-file provider sent an HTTP request to \(request.url)")
        throw PluginHTTPError.connectionFailed("no network in this test")
    }
}
