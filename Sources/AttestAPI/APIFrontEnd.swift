import AttestServer
import Hummingbird

/// The JSON API under `/v1` and its description, `/openapi.yaml`: routes that parse, make one
/// core call and answer as the document says.
package struct APIFrontEnd: FrontEnd {
    package init() {}

    package func register(on router: Router<AttestRequestContext>, services: AttestServices, configuration: ServerConfiguration) {
        OpenAPIRoute().register(on: router)
        SCIMRoutes(services: services, origin: configuration.web.origin).register(on: router)
        let campus = router.group("v1/campuses/:campus").add(middleware: CampusMiddleware(directory: services.campuses))
        // What a person reaches by following a link, with no session: refusals to a browser are pages.
        func links(_ page: @escaping LinkRefusalPages.Page) -> RouterGroup<AttestRequestContext> {
            router.group("v1/campuses/:campus").add(middleware: LinkRefusalPages(campuses: services.campuses, page: page))
                .add(middleware: CampusMiddleware(directory: services.campuses))
        }
        SessionRoutes(services: services).register(on: campus)
        UnsubscribeRoutes(services: services).register(on: links(UnsubscribeRoutes.refusal))
        GuestRoutes(services: services).register(on: campus)
        let signedIn = campus.group().add(middleware: AuthenticationMiddleware(services: services))
        SurveyRoutes(services: services).register(on: signedIn)
        AttestationRoutes(services: services).register(campus: campus, signedIn: signedIn)
        BadgeRoutes(services: services).register(campus: campus, signedIn: signedIn)
        TestingLocationRoutes(services: services).register(on: signedIn)
        CommunityRoutes(services: services).register(on: signedIn)
        NotificationRoutes(services: services).register(on: signedIn)
        PushRoutes(services: services).register(on: signedIn)
        // A member's own private data: never with an operator's session, counted per member.
        let ownData = signedIn.group().add(middleware: OwnDataMiddleware(limiters: services.limiters))
        JournalRoutes(services: services).register(on: ownData)
        EpisodeRoutes(services: services).register(on: ownData)
        ExportRoutes(services: services).register(on: ownData)
        PlaceRoutes(services: services).register(on: ownData)
        ProfileRoutes(services: services).register(on: ownData)
        ShareRoutes(services: services).register(links: links(ShareRoutes.refusal), signedIn: ownData)
        StatisticsRoutes(services: services).register(campus: campus, signedIn: signedIn)
        RecordsRoutes(services: services).register(campus: campus, signedIn: signedIn, ownData: ownData)
    }
}
