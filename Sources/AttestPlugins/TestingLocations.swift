internal import AttestFoundation
import Foundation

/// A place to get tested.
public struct TestingLocation: Sendable, Codable, Equatable {
    public var name: String
    public var address: String
    public var latitude: Double
    public var longitude: Double
    public var hours: String
    public var phone: String
    public var url: String
    public var notes: String

    public init(
        name: String, address: String = "", latitude: Double, longitude: Double, hours: String = "", phone: String = "",
        url: String = "", notes: String = ""
    ) {
        self.name = name
        self.address = address
        self.latitude = latitude
        self.longitude = longitude
        self.hours = hours
        self.phone = phone
        self.url = url
        self.notes = notes
    }

    /// Reads the shared JSON shape, where only name, lat and lon are required
    /// (`{"name", "address", "lat", "lon", "hours", "phone", "url", "notes"}`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        address = try container.decodeIfPresent(String.self, forKey: .address) ?? ""
        latitude = try container.decode(Double.self, forKey: .lat)
        longitude = try container.decode(Double.self, forKey: .lon)
        hours = try container.decodeIfPresent(String.self, forKey: .hours) ?? ""
        phone = try container.decodeIfPresent(String.self, forKey: .phone) ?? ""
        url = try container.decodeIfPresent(String.self, forKey: .url) ?? ""
        notes = try container.decodeIfPresent(String.self, forKey: .notes) ?? ""
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(address, forKey: .address)
        try container.encode(latitude, forKey: .lat)
        try container.encode(longitude, forKey: .lon)
        try container.encode(hours, forKey: .hours)
        try container.encode(phone, forKey: .phone)
        try container.encode(url, forKey: .url)
        try container.encode(notes, forKey: .notes)
    }

    enum CodingKeys: String, CodingKey { case name, address, lat, lon, hours, phone, url, notes }

    /// What is wrong with it, or nil: a name of 1–200 characters, coordinates on Earth.
    public var problem: String? {
        if name.isEmpty || name.count > 200 { return "name must be 1 to 200 characters" }
        if !(-90...90).contains(latitude) { return "lat must be between -90 and 90" }
        if !(-180...180).contains(longitude) { return "lon must be between -180 and 180" }
        if !url.isEmpty, !Self.isWebAddress(url) { return "url must be an http or https address (such as https://clinic.example.org)" }
        return nil
    }

    /// An absolute http(s) URL with a host: what a page may link to (never `javascript:`).
    static func isWebAddress(_ text: String) -> Bool {
        guard text.utf8.count <= 2_000, let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host else {
            return false
        }
        return (scheme == "https" || scheme == "http") && !host.isEmpty
    }

    /// Great-circle distance in kilometres (haversine, mean Earth radius).
    public func distance(toLatitude latitude: Double, longitude: Double) -> Double {
        let radians = Double.pi / 180
        let dLat = (latitude - self.latitude) * radians, dLon = (longitude - self.longitude) * radians
        let a =
            sin(dLat / 2) * sin(dLat / 2)
            + cos(self.latitude * radians) * cos(latitude * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 6371.0088 * 2 * atan2(a.squareRoot(), (1 - a).squareRoot())
    }
}

/// What a provider answers: its locations, and whether they are an older copy kept because
/// the source could not be reached.
public struct ProvidedLocations: Sendable, Equatable {
    public var locations: [TestingLocation]
    public var stale: Bool

    public init(locations: [TestingLocation], stale: Bool = false) {
        self.locations = locations
        self.stale = stale
    }
}

/// Lists testing locations for a campus that enabled it.
///
/// Implementation requirements: answer quickly (the platform waits about 2 s, then leaves
/// the provider out and names it as unavailable); throw when there is nothing to answer;
/// when the source is down but an earlier answer is kept, return it with `stale: true`.
public protocol TestingLocationProvider: Sendable {
    func locations(context: PluginContext) async throws -> ProvidedLocations
}

/// A line of a locations file that cannot be used; the whole file is refused.
public typealias TestingLocationFileError = DataFileError

extension TestingLocation {
    /// Parses CSV (header `name,address,lat,lon,hours,phone,url,notes`, in any order; name,
    /// lat and lon required) or a JSON list of the same fields. Every row is checked
    /// first: a bad one throws, naming its line, and nothing is returned. The format of
    /// `attest locations import`, for providers that read files of their own. Throws
    /// `TestingLocationFileError`.
    public static func parseList(_ data: Data) throws -> [TestingLocation] {
        let text = String(decoding: data, as: UTF8.self)
        if text.drop(while: \.isWhitespace).first == "[" {
            guard let items = try? JSONSerialization.jsonObject(with: data) as? [Any] else {
                throw TestingLocationFileError(line: 1, reason: "not a JSON list of locations")
            }
            return try items.enumerated().map { index, item in
                guard let object = item as? [String: Any],
                    let data = try? JSONSerialization.data(withJSONObject: object),
                    let location = try? JSONDecoder().decode(TestingLocation.self, from: data)
                else {
                    throw TestingLocationFileError(line: index + 1, reason: "item \(index + 1) needs name (text), lat and lon (numbers)")
                }
                if let problem = location.problem {
                    throw TestingLocationFileError(line: index + 1, reason: "item \(index + 1): \(problem)")
                }
                return location
            }
        }
        let records: [(line: Int, fields: [String])]
        do { records = try CSV.records(text) } catch let error as CSV.UnclosedQuote {
            throw TestingLocationFileError(line: error.line, reason: "a quoted field is never closed")
        }
        guard let header = records.first else { throw TestingLocationFileError(line: 1, reason: "the file is empty") }
        let columns = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        for required in ["name", "lat", "lon"] where !columns.contains(required) {
            throw TestingLocationFileError(
                line: header.line,
                reason:
                    "the header needs a \(required) column (name,address,lat,lon,hours,phone,url,notes)\(CSV.separatorHint(header.fields))")
        }
        return try records.dropFirst().filter { !($0.fields.count == 1 && $0.fields[0].isEmpty) }.map { line, fields in
            func field(_ name: String) -> String {
                guard let index = columns.firstIndex(of: name), index < fields.count else { return "" }
                return fields[index].trimmingCharacters(in: .whitespaces)
            }
            guard fields.count <= columns.count else {
                throw TestingLocationFileError(line: line, reason: "more fields than the header names")
            }
            guard let lat = Double(field("lat")), let lon = Double(field("lon")) else {
                throw TestingLocationFileError(
                    line: line, reason: "lat and lon must be numbers, got \"\(field("lat"))\" and \"\(field("lon"))\"")
            }
            let location = TestingLocation(
                name: field("name"), address: field("address"), latitude: lat, longitude: lon, hours: field("hours"),
                phone: field("phone"), url: field("url"), notes: field("notes"))
            if let problem = location.problem { throw TestingLocationFileError(line: line, reason: problem) }
            return location
        }
    }
}
