import AttestFoundation
import AttestPlugins
import Foundation
import Tenancy

/// The guests' messages (DESIGN §12): a visitor's six-digit code, sent at once through the
/// campus's `email` channel (or printed by `terminal` under `attest dev`), and a host's word
/// that their guest arrived, through the host's own channels like a reminder.
extension MemberMessage {
    /// The code and the link that erases the visit, in the visitor's language (`es`, else
    /// English). The code is in the subject too, where a phone shows it without opening the
    /// message. No unsubscribe: it is no list.
    static func guestCode(
        campus: Campus, name: String, address: String, code: String, host: String, eraseLink: String, language: String = "en"
    ) -> MemberMessage {
        let words = GuestMessageTexts.of(language)
        let person = MailMessage.oneLine(name), hostName = MailMessage.oneLine(host), campusName = campus.name
        let retention = GuestMessageTexts.retentionDays(campus)
        func fill(_ template: String, html: Bool) -> String {
            func escape(_ text: String) -> String { html ? HTMLText.escape(text) : text }
            // In one pass: a host or guest named "{code}" is shown as named.
            return template.filled([
                "code": code, "days": "\(retention)", "campus": escape(campusName), "host": escape(hostName), "name": escape(person),
            ])
        }
        let subject = fill(words.subject, html: false)
        let lines = [
            fill(words.hello, html: false), "", fill(words.intro, html: false), "", "    \(code)", "", words.within, "",
            words.erase + " " + eraseLink, fill(words.otherwise, html: false),
        ]
        let html = """
            <!doctype html><html lang="\(words.language)"><head><meta charset="utf-8"><title>\(HTMLText.escape(subject))</title></head><body>
            <p>\(fill(words.hello, html: true))</p>
            <p>\(fill(words.intro, html: true))</p>
            <p style="font-size:2em;letter-spacing:.2em"><strong>\(code)</strong></p>
            <p>\(HTMLText.escape(words.within))</p>
            <p><small><a href="\(HTMLText.escape(eraseLink))">\(HTMLText.escape(words.eraseNow))</a>. \(fill(words.otherwise, html: true))</small></p>
            </body></html>
            """
        return MemberMessage(
            to: MailAddress(name: name, address: address), language: words.language, subject: subject, text: lines.joined(separator: "\n"),
            html: html, unsubscribe: "", survey: "", shortText: subject)
    }

    /// A host's word that their guest checked in, with the badge the guest survey gave.
    static func guestArrived(
        campus: Campus, name: String, address: String, guest: String, color: BadgeColor?, language: String, origin: String,
        unsubscribeToken: String
    ) -> MemberMessage {
        let es = language == "es"
        let guestName = MailMessage.oneLine(guest)
        let unsubscribe = "\(origin)/v1/campuses/\(campus.slug)/unsubscribe?token=\(unsubscribeToken)"
        let home = "\(origin)/c/\(campus.slug)/"
        let colorWord: String =
            switch color {
            case .green?: es ? "verde" : "green"
            case .yellow?: es ? "amarillo" : "yellow"
            case .red?: es ? "rojo" : "red"
            default: es ? "sin color" : "no colour"
            }
        let subject = es ? "Su visita \(guestName) llegó a \(campus.name)" : "Your guest \(guestName) checked in at \(campus.name)"
        let body =
            es
            ? "\(guestName) se registró hoy como su visita en \(campus.name). Su pase de visita es \(colorWord)."
            : "\(guestName) checked in today as your guest at \(campus.name). Their guest badge is \(colorWord)."
        let stop =
            es
            ? "Para dejar de recibir estos mensajes por este medio con un clic:" : "To stop these messages on this channel with one click:"
        let text = [body, "", home, "", stop + " " + unsubscribe].joined(separator: "\n")
        let html = """
            <!doctype html><html lang="\(language)"><head><meta charset="utf-8"><title>\(HTMLText.escape(subject))</title></head><body>
            <p>\(HTMLText.escape(body))</p>
            <p><small><a href="\(HTMLText.escape(unsubscribe))">\(HTMLText.escape(stop))</a></small></p>
            </body></html>
            """
        return MemberMessage(
            to: MailAddress(name: name, address: address), language: language, subject: subject, text: text, html: html,
            unsubscribe: unsubscribe, survey: home, shortText: body)
    }
}

/// A visitor's code's words per language (Spanish, else English).
struct GuestMessageTexts: Wording {
    var language, subject, hello, intro, within, erase, eraseNow, otherwise: String

    static let english = GuestMessageTexts(
        language: "en", subject: "{code} is your visitor code for {campus}", hello: "Hello {name},",
        intro: "Your code to check in as {host}'s guest at {campus} is:",
        within:
            "Type it on the visit page within 10 minutes. If you did not ask for it, ignore this message: nothing happens without the code.",
        erase: "To erase your visit and everything it holds now, open:", eraseNow: "Erase my visit now",
        otherwise: "Otherwise it is erased by itself {days} days after the visit.")
    static let spanish = GuestMessageTexts(
        language: "es", subject: "{code} es su código de visita para {campus}", hello: "Hola, {name}:",
        intro: "Su código para registrarse como visita de {host} en {campus} es:",
        within: "Escríbalo en la página de la visita antes de 10 minutos. Si no lo pidió, ignore este mensaje: sin el código no pasa nada.",
        erase: "Para borrar ahora su visita y todo lo que guarda, abra:", eraseNow: "Borrar mi visita ahora",
        otherwise: "Si no, se borra sola {days} días después de la visita.")

    /// The campus's guest retention in days (14 by default).
    static func retentionDays(_ campus: Campus) -> Int {
        if case .object(let settings)? = campus.settings.bytes.withUnsafeBytes({ try? JSONValue(parsing: $0) }),
            case .string(let text)? = settings["guest-retention-days"], let value = Int(text), (1...3650).contains(value)
        {
            return value
        }
        return 14
    }
}

/// Why a visitor's code could not be sent, in one line a person can act on.
public struct GuestCodeFailure: Error, CustomStringConvertible {
    public let description: String
    /// Whether trying again later may help (the mail server's 4xx, a timeout).
    public let transient: Bool
}

extension OutboxWorker {
    /// Sends a visitor their code now, through the campus's `email` channel, or its `terminal`
    /// one under `attest dev`: the code is never stored, so it is not queued. Returns the
    /// channel's name; throws `GuestCodeFailure` when the campus has no channel to send it or
    /// sending failed.
    public func sendGuestCode(
        campus: Campus, name: String, address: String, code: String, host: String, eraseLink: String, language: String = "en"
    ) async throws -> String {
        guard let channels = memberChannels else { throw GuestCodeFailure(description: "this server sends no email", transient: false) }
        let message = MemberMessage.guestCode(
            campus: campus, name: name, address: address, code: code, host: host, eraseLink: eraseLink, language: language)
        for id in [MemberChannels.email, MemberChannels.terminal] {
            guard let settings = try await plugins.settings(campus: campus.id, kind: .sink, id: id) else { continue }
            guard let sink = try channels.make(id: id, settings: settings, campus: campus.id) as? MemberChannelSink else { continue }
            let now = Date()
            switch sink.transport {
            case .terminal(let print):
                print(
                    "── a visitor's code, as email would send it (attest dev prints it; no mail is sent) ──\nTo: \(address)\nSubject: \(message.subject)\n\n\(message.text)\n──"
                )
                return id
            case .email(let settings, let smtp):
                let mail = message.mail(from: settings.from, replyTo: settings.replyTo, now: now)
                do {
                    let data = try mail.signed(by: settings.dkim, boundary: MailMessage.newBoundary(), now: now)
                    try await smtp.send(from: settings.from.address, to: [address], data: data)
                } catch {
                    throw GuestCodeFailure(description: "\(error)", transient: (error as? SMTPFailure).map { !$0.isPermanent } ?? false)
                }
                return id
            case .webPush: continue
            }
        }
        throw GuestCodeFailure(description: "\(campus.name) has no email channel to send visitors' codes", transient: false)
    }
}
