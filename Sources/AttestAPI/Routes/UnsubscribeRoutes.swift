import AttestFoundation
import AttestPlugins
import AttestServer
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Notifications
import Surveys
import Tenancy

/// One-click unsubscribe (RFC 8058), no session: `GET /v1/campuses/{campus}/unsubscribe?token=`
/// shows a page with a button and changes nothing (a mail scanner fetching every link stops
/// nothing); `POST` the same URL (what a mail client sends for `List-Unsubscribe-Post:
/// List-Unsubscribe=One-Click`, or the page's button) turns that channel off for that member.
/// An unknown, altered or other campus's token is one 404, and an address trying many is slowed.
/// The pages speak the member's language (`UnsubscribeWords`) and link to their settings; a
/// refusal a browser asked for is a page too (`refusal`, through `LinkRefusalPages`).
struct UnsubscribeRoutes: Sendable {
    let services: AttestServices

    /// The tokens of `campus`, keyed from its sealed subject key (HKDF with a label of their own).
    static func tokens(_ services: AttestServices, campus: Campus) async throws -> UnsubscribeTokens {
        UnsubscribeTokens(campusSecret: try await services.badges.keys.subjectKey(campus: campus.id))
    }

    func register(on campus: RouterGroup<AttestRequestContext>) {
        let store = NotificationPreferenceStore(client: services.database)
        campus.get("unsubscribe") { request, context -> Response in
            let (campusValue, user, channel) = try await read(request, context)
            let language = try await Self.language(request, chosen: store.preferences(campus: campusValue.id, user: user).language)
            return StandalonePage.response(Self.html(.ask(channel), campus: campusValue, language: language))
        }
        campus.post("unsubscribe") { request, context -> Response in
            let (campusValue, user, channel) = try await read(request, context)
            if request.headers[.contentType] != nil {
                // RFC 8058's body, or the page's button: nothing else.
                let form = try await WebForm.read(request, context: context, limit: 1_024)
                for field in form.fields where field.name != "List-Unsubscribe" {
                    throw Problem.validation([
                        .init(field: FieldProblem.name(field.name), message: "is not a field here (only List-Unsubscribe)")
                    ])
                }
            }
            let chosen = try await store.turnOff(campus: campusValue, user: user, channel: channel, now: services.clock())
            let language = Self.language(request, chosen: chosen.language)
            return StandalonePage.response(Self.html(.done(channel), campus: campusValue, language: language))
        }
    }

    private func read(_ request: Request, _ context: AttestRequestContext) async throws -> (Campus, UserID, NotificationChannel) {
        let campus = try context.requireCampus()
        let query = QueryParameters(request, accepting: ["token"])
        guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
        let address = context.clientAddress ?? "unknown"
        let limiter = services.limiters.unknownTokensByAddress
        if let wait = limiter.exhausted(address) {
            throw Problem.tooManyRequests("Too many unsubscribe links this campus does not know came from your address.", retryAfter: wait)
        }
        guard let token = query["token"],
            let (user, channel) = try await Self.tokens(services, campus: campus).read(token, campus: campus.id),
            try await services.users.find(campus: campus.id, id: user) != nil
        else {
            _ = limiter.take(address)
            throw Problem.notFound(
                "This unsubscribe link does not name anyone at this campus: it was copied wrong. Open the settings page of the campus to choose your messages."
            )
        }
        return (campus, user, channel)
    }

    /// The language of the page: the one the member chose for their messages, else the best
    /// the browser asks for of those the messages speak, else English.
    static func language(_ request: Request, chosen: String?) -> String {
        if let chosen, WrittenLanguages.all.contains(chosen) { return chosen }
        return StandalonePage.language(request)
    }

    /// The page a refusal shows a browser (`LinkRefusalPages`): the link names nobody here
    /// (or was cut short, or its campus is unknown), or the address tried too many.
    static func refusal(_ problem: Problem, campus: Campus?, language: String) -> String {
        guard let campus else {
            let words = UnsubscribeWords.of(language)
            return StandalonePage.html(
                language: language, title: words.brokenTitle, campus: nil,
                body: "<h1>\(words.brokenTitle)</h1><p>\(words.brokenNowhere)</p>")
        }
        return html(problem.status == .tooManyRequests ? .busy : .broken, campus: campus, language: language)
    }

    /// What the page says.
    enum Page {
        /// Asks whether to stop the channel, with a button; changes nothing.
        case ask(NotificationChannel)
        /// The channel was turned off.
        case done(NotificationChannel)
        /// The link names nobody here (or was cut short).
        case broken
        /// The address tried too many links that name nobody.
        case busy
    }

    static func html(_ kind: Page, campus: Campus, language: String) -> String {
        let escape = HTMLText.escape
        let words = UnsubscribeWords.of(language)
        let settings = "<a href=\"/c/\(escape(campus.slug))/settings\">\(words.settings)</a>"
        func fill(_ text: String) -> String { text.filled(["settings": settings, "campus": escape(campus.name)]) }
        let title: String, body: String
        switch kind {
        case .ask(let channel):
            let email = channel == .email
            title = words.askTitle
            body =
                "<h1>\(email ? words.askEmail : words.askPush)</h1><p>\(fill(email ? words.whyEmail : words.whyPush))</p>"
                + "<form method=\"post\"><input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\">"
                + "<p><button type=\"submit\">\(email ? words.stopEmail : words.stopPush)</button></p></form>"
        case .done(let channel):
            title = words.doneTitle
            body = "<h1>\(words.doneTitle)</h1><p>\(fill(channel == .email ? words.doneEmail : words.donePush))</p>"
        case .broken:
            title = words.brokenTitle
            body = "<h1>\(words.brokenTitle)</h1><p>\(fill(words.broken))</p>"
        case .busy:
            title = words.busyTitle
            body = "<h1>\(words.busyTitle)</h1><p>\(fill(words.busy))</p>"
        }
        return StandalonePage.html(language: language, title: title, campus: campus, body: body)
    }
}

/// The unsubscribe page's words in each language the messages speak (the reminder's are
/// `ReminderTexts`). `{campus}` is the campus's name, `{settings}` a link to the settings page.
struct UnsubscribeWords: Wording {
    var askTitle, askEmail, askPush, whyEmail, whyPush, stopEmail, stopPush: String
    var doneTitle, doneEmail, donePush, brokenTitle, broken, brokenNowhere, busyTitle, busy, settings: String

    static let english = UnsubscribeWords(
        askTitle: "Unsubscribe", askEmail: "Stop email?", askPush: "Stop push notifications?",
        whyEmail: "{campus} sends you reminders and notices by email. One click stops them; your {settings} turn them on again.",
        whyPush:
            "{campus} sends you reminders and notices as push notifications. One click stops them; your {settings} turn them on again.",
        stopEmail: "Stop email", stopPush: "Stop push notifications",
        doneTitle: "Unsubscribed",
        doneEmail: "{campus} will send you no more email. You can turn email on again in your {settings}.",
        donePush: "{campus} will send you no more push notifications. You can turn them on again in your {settings}.",
        brokenTitle: "This link does not work",
        broken:
            "It names nobody at {campus}: it may have been copied wrong or cut short. You can choose your messages in your {settings} (you may be asked to sign in).",
        brokenNowhere:
            "It names no campus here: it may have been copied wrong or cut short. Open the link in your last message again, or choose your messages on your campus's settings page.",
        busyTitle: "Too many tries",
        busy:
            "This address tried too many links that do not work. Wait a few minutes and try again, or choose your messages in your {settings}.",
        settings: "settings")
    static let spanish = UnsubscribeWords(
        askTitle: "Cancelar la suscripción", askEmail: "¿Dejar de recibir correos?", askPush: "¿Dejar de recibir notificaciones push?",
        whyEmail: "{campus} le envía recordatorios y avisos por correo. Un clic los detiene; su {settings} los vuelve a activar.",
        whyPush:
            "{campus} le envía recordatorios y avisos como notificaciones push. Un clic las detiene; su {settings} las vuelve a activar.",
        stopEmail: "Dejar de recibir correos", stopPush: "Dejar de recibir notificaciones push",
        doneTitle: "Suscripción cancelada",
        doneEmail: "{campus} no le enviará más correos. Puede volver a activarlos en su {settings}.",
        donePush: "{campus} no le enviará más notificaciones push. Puede volver a activarlas en su {settings}.",
        brokenTitle: "Este enlace no funciona",
        broken:
            "No corresponde a nadie en {campus}: puede que se haya copiado mal o esté incompleto. Puede elegir sus mensajes en su {settings} (quizá se le pida iniciar sesión).",
        brokenNowhere:
            "No corresponde a ningún campus de aquí: puede que se haya copiado mal o esté incompleto. Abra de nuevo el enlace de su último mensaje, o elija sus mensajes en la página de configuración de su campus.",
        busyTitle: "Demasiados intentos",
        busy:
            "Desde esta dirección se probaron demasiados enlaces que no funcionan. Espere unos minutos y vuelva a intentarlo, o elija sus mensajes en su {settings}.",
        settings: "configuración")
}
