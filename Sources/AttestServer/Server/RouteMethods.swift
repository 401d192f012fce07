import Hummingbird
import Synchronization

/// The methods each registered path answers, read from the router once every route is
/// registered: a request for a path that exists, with a method it does not answer, gets
/// `405 Method Not Allowed` with `Allow` (RFC 9110 §15.5.6) instead of a 404.
public final class RouteMethods: Sendable {
    private struct Route: Sendable {
        package var path: RouterPath
        package var methods: Set<String>
    }

    private let routes = Mutex<[Route]>([])

    public init() {}

    /// Takes the router's routes (call after the last route is added). HEAD is allowed
    /// wherever GET is (Hummingbird answers it).
    public func load<Context>(from router: Router<Context>) {
        var byPath: [String: Route] = [:]
        for route in router.routes {
            byPath[route.path.description, default: Route(path: route.path, methods: [])].methods.insert(route.method.rawValue)
        }
        let loaded = byPath.values.map { route in
            Route(path: route.path, methods: route.methods.contains("GET") ? route.methods.union(["HEAD"]) : route.methods)
        }
        routes.withLock { $0 = loaded }
    }

    /// The methods `path` answers, sorted, or nil when no route has that path.
    public func allowed(path: String) -> [String]? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        let methods = routes.withLock { routes in
            // As the router does: a path's literal segments win over a parameter (`…/episodes/summary`
            // is not `…/episodes/{id}`).
            let matching = routes.filter { Self.matches($0.path, segments) }
            let best = matching.map { Self.literals($0.path) }.max() ?? 0
            return matching.filter { Self.literals($0.path) == best }.reduce(into: Set<String>()) { $0.formUnion($1.methods) }
        }
        return methods.isEmpty ? nil : methods.sorted()
    }

    /// How many of a path's components are literal text (not a parameter or wildcard).
    package static func literals(_ path: RouterPath) -> Int {
        path.components.filter { component in
            let text = component.description
            return !(text.hasPrefix("{") || text.hasPrefix(":") || text.hasPrefix("*"))
        }.count
    }

    package static func matches(_ path: RouterPath, _ segments: [Substring]) -> Bool {
        var index = 0
        for component in path.components {
            if component.description == "**" { return true }
            guard index < segments.count, component ~= segments[index] else { return false }
            index += 1
        }
        return index == segments.count
    }
}
