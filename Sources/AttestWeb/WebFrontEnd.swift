import AttestServer
import Hummingbird

/// The pages under `/c/{campus}/` and their static files: server-rendered HTML over the same
/// core calls as the API.
package struct WebFrontEnd: FrontEnd {
    package init() {}

    package func register(on router: Router<AttestRequestContext>, services: AttestServices, configuration: ServerConfiguration) {
        WebRoutes(services: services, settings: configuration.web).register(on: router)
    }
}
