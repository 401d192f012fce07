import AttestPlugins
import Foundation
import Synchronization

/// Testing locations read from a file on the server, for a campus whose list is kept by
/// another system that drops a CSV (or JSON) export somewhere the servers can read.
///
/// Settings: `{"path": "/var/lib/attest/locations.csv"}` (absolute). The file has the shape of
/// `attest locations import`: a header naming `name,address,lat,lon,hours,phone,url,notes`
/// (name, lat and lon required). It is read again whenever its modification time changes;
/// when it disappears or a new version does not parse, the last good copy is served, marked
/// stale, and the problem is logged.
public final class CSVFileProvider: TestingLocationProvider {
    public static let id = "csv-file"

    public let path: String

    private struct Loaded {
        var modified: Date
        var locations: [TestingLocation]
    }
    private let loaded = Mutex<Loaded?>(nil)

    public init(settings: JSONValue) throws {
        guard case .string(let path)? = settings["path"], path.hasPrefix("/") else {
            throw PluginSettingsError(
                "path is required: the absolute path of a locations CSV file, such as \"/var/lib/attest/locations.csv\"")
        }
        self.path = path
    }

    public func locations(context: PluginContext) async throws -> ProvidedLocations {
        let last = loaded.withLock { $0 }
        let modified: Date
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            modified = attributes[.modificationDate] as? Date ?? .distantPast
        } catch {
            return try stale(last, because: "cannot read \(path): \(error.localizedDescription)", context: context)
        }
        if let last, last.modified == modified { return ProvidedLocations(locations: last.locations) }
        let locations: [TestingLocation]
        do {
            locations = try TestingLocation.parseList(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            return try stale(last, because: "\(path): \(error)", context: context)
        }
        loaded.withLock { $0 = Loaded(modified: modified, locations: locations) }
        return ProvidedLocations(locations: locations)
    }

    /// The last good copy, marked stale, or the error when there is none.
    private func stale(_ last: Loaded?, because problem: String, context: PluginContext) throws -> ProvidedLocations {
        guard let last else { throw CSVFileError(message: problem) }
        context.logger.warning("serving the last good copy of the testing locations", metadata: ["problem": "\(problem)"])
        return ProvidedLocations(locations: last.locations, stale: true)
    }
}

/// The file cannot be read or parsed and there is no earlier copy.
public struct CSVFileError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
