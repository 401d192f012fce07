import AttestFoundation
import AttestPlugins
import Foundation

/// The pages' words in each language they are offered in. English is complete and the
/// fallback; a key missing from another language shows its English text. `{0}`, `{1}` …
/// in a text are filled by `WebText.format`.
enum WebText {
    /// The languages the pages speak, in the picker's order.
    static let languages: [(code: String, name: String)] = [("en", "English"), ("es", "Español")]

    /// The language to speak: the `attest-lang` cookie's when it names one offered, else the
    /// best of `Accept-Language` ("es-MX" picks "es"), else English.
    static func language(cookie: String?, acceptLanguage: String?) -> String {
        if let cookie, languages.contains(where: { $0.code == cookie }) { return cookie }
        guard let header = acceptLanguage else { return "en" }
        var best: (code: String, weight: Double)?
        for part in header.split(separator: ",").prefix(20) {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let tag = pieces.first, let primary = tag.split(separator: "-").first.map { String($0) },
                languages.contains(where: { $0.code == primary })
            else { continue }
            var weight = 1.0
            for parameter in pieces.dropFirst() where parameter.hasPrefix("q=") { weight = Double(parameter.dropFirst(2)) ?? 0 }
            if weight > 0, weight > (best?.weight ?? 0) { best = (primary, weight) }
        }
        return best?.code ?? "en"
    }

    /// Every word in `language`, English where it has none.
    static func table(_ language: String) -> [String: String] {
        language == "es" ? spanishComplete : english
    }
    private static let spanishComplete = spanish.merging(journalSpanish) { mine, _ in mine }.merging(english) { mine, _ in mine }

    static func format(_ text: String, _ values: String...) -> String {
        var result = text
        for (index, value) in values.enumerated() { result = result.replacingOccurrences(of: "{\(index)}", with: value) }
        return result
    }

    static let english = englishBase.merging(journalEnglish) { mine, _ in mine }

    private static let englishBase: [String: String] = [
        "skip": "Skip to main content", "navLabel": "Main", "language": "Language", "signOut": "Sign out",
        "signedInAs": "Signed in as", "signIn": "Sign in", "backHome": "Back to today's page",
        "navToday": "Today", "navBadge": "Badge", "navHistory": "History", "navLocations": "Testing", "navStats": "Campus stats",
        "navScan": "Scan badges", "navAdmin": "Dashboard", "navFollowUps": "Follow-ups",
        "signInTitle": "Sign in", "signInIntro": "Sign in with your university account.",
        "noProviders":
            "This campus has no sign-in provider set up for the web yet. Ask the campus's IT team to add one (attest campus oidc add … --client-id … --client-secret-file …).",
        "signInWith": "Sign in with {0}",
        "demoTitle": "Demo sign-in", "demoIntro": "attest dev only: sign in as one of the demo people, no password.",
        "errorSummary": "There is a problem", "requiredNote": "Questions marked * need an answer.", "requiredWord": "required",
        "errorWord": "Error", "submit": "Submit my answers", "yes": "Yes", "no": "No",
        "surveyIntro": "Answer before {0} to be on time. Your answers are private: only your badge colour is shared.",
        "numberHint": "A number from {0} to {1}", "textHint": "At most {0} characters",
        "badgeTitle": "Your badge", "expired": "expired", "date": "Date", "timeNow": "Time now", "validUntil": "Valid until",
        "timeLeft": "Time left", "qrHint": "Show this code at the door. It changes every day; a screenshot does not tick.",
        "answerSurvey": "Answer today's survey", "notSubmittedDeadline": "Not submitted yet. Submit before {0} to be on time.",
        "alreadySubmitted": "You already submitted today's answers. The next survey opens at {0}.",
        "colorGreen": "Green", "colorYellow": "Yellow", "colorRed": "Red", "colorGray": "Not submitted",
        "historyTitle": "Your history", "badge": "Badge", "reason": "Reason", "submittedAt": "Submitted", "late": "late",
        "historyEmpty": "No attestations yet.", "newest": "Newest", "older": "Older",
        "locationsTitle": "Testing locations", "useLocation": "Use my location (nearest first)",
        "byName": "Listed by name. Share your location to list the nearest first.",
        "byDistance": "Nearest first from the location you shared.",
        "someUnavailable": "Some sources did not answer in time:", "hours": "Hours", "phone": "Phone", "map": "Map", "website": "Website",
        "noLocations": "This campus has not listed any testing locations yet.", "kmAway": "{0} km away",
        "communityLine": "Community risk in {0}: {1}{2} (as of {3}).",
        "communitySummary": "Risk: {0}. Trend: {1}. As of {2}.",
        "communityTitle": "New cases in {0}", "communityDesc": "7-day average of new cases in {0}, {1} to {2}",
        "communityPer100k": "7-day average per 100,000 a day", "communityPerDay": "7-day average a day", "communityNewCases": "New cases",
        "communitySource": "Source: {0}.", "communityStale": "An older copy: the source cannot be reached right now.",
        "communityUnavailable": "The region's community figures cannot be fetched right now.",
        "risk-low": "low", "risk-medium": "medium", "risk-high": "high", "risk-very-high": "very high", "risk-severe": "severe",
        "riskUnknown": "unknown (no population)",
        "trend-rising": "rising", "trend-falling": "falling", "trend-flat": "flat",
        "statsTitle": "Campus stats",
        "statsIntro": "The last {0} days at {1}. Days with fewer than {2} attestations are hidden to protect privacy.",
        "colorShares": "Badge colours per day (percent of attestations)",
        "symptomShares": "Symptoms reported per day (percent of attestations)",
        "hiddenDay": "hidden", "percentOf": "{0}%",
        "adminTitle": "Dashboard", "from": "From", "to": "To", "show": "Show", "downloadCSV": "Download CSV (aggregates)",
        "complianceRate": "Compliance (on time, of active member-days)", "noData": "no data",
        "totals": "{0} submitted, {1} on time, {2} late, {3} missing in the range.",
        "pieTitle": "Badge colours on {0}", "pieDesc": "Green {0}, yellow {1}, red {2}.", "pieEmpty": "No attestations on {0}.",
        "barsTitle": "On time, late and missing per day",
        "barsDesc": "Stacked bars for {0} days from {1} to {2}; the table below has every figure.",
        "linesTitle": "Symptom trends (percent of attestations)", "symptomCounts": "Symptoms reported per day (count)",
        "linesDesc": "One line per symptom over {0} days; the table below has every figure.",
        "onTime": "On time", "missing": "Missing", "submitted": "Submitted", "active": "Active members", "count": "Count",
        "percent": "Percent",
        "followUpsTitle": "Follow-ups", "followUpsAudited": "Every view of this list is recorded in the audit log.",
        "followUpsCaption": "Red and yellow badges on {0}", "name": "Name", "email": "Email",
        "followUpsEmpty": "No red or yellow badges on this date.", "firstPage": "First page", "nextPage": "Next page",
        "scanTitle": "Scan badges", "scanReady": "Ready: scan or paste a badge.", "useCamera": "Scan with the camera",
        "pasteLabel": "Badge code", "pasteHint": "Paste the badge's code, or type it from the member's screen.",
        "uploadLabel": "Or read a photo of the code", "check": "Check badge",
        "offlineNote":
            "Once this page has loaded, badges are checked here even without a network, with the campus's keys saved for up to 12 hours.",
        "verdictGenuine": "Genuine, today's: {0}", "verdictExpired": "Not valid: expired",
        "verdictOtherCampus": "Not valid: from another campus",
        "verdictForged": "Not valid: forged (the signature does not match)",
        "verdictUnknownKey": "Not valid: signed with a key this campus does not have",
        "verdictMalformed": "Not valid: not a badge code", "verdictNotToday": "Not valid: not today's badge",
        "verdictOffline": "Checked on this device (offline).", "verdictOnline": "Checked on this device and by the server.",
        "verdictKeysOld": "The saved keys are too old to check offline: connect to the network and reload.",
        "verdictNoCode": "No code found in the picture.", "verdictChecking": "Checking…",
        "verdictServerDisagrees": "The server does not accept this badge: {0}",
        "forbiddenTitle": "Not allowed", "forbidden": "This page needs the role {0}. Ask a campus administrator to grant it.",
        "operatorSessionTitle": "Sign in as yourself",
        "operatorSession":
            "This session was made by an operator, not signed in to by you: your journal, episodes and sharing open only after you sign in yourself. Sign out, then sign in.",
        "notFoundTitle": "Not found", "errorTitle": "Something went wrong", "signInNeeded": "Sign in to see this page.",
        "csrfFailed": "This form expired or came from another site. Go back, reload the page and try again.",
        "signInFailed": "Sign-in did not work: {0} Try again.",
    ]

    static let spanish: [String: String] = [
        "skip": "Saltar al contenido principal", "navLabel": "Principal", "language": "Idioma", "signOut": "Cerrar sesión",
        "signedInAs": "Sesión iniciada como", "signIn": "Iniciar sesión", "backHome": "Volver a la página de hoy",
        "navToday": "Hoy", "navBadge": "Credencial", "navHistory": "Historial", "navLocations": "Pruebas", "navStats": "Estadísticas",
        "navScan": "Escanear credenciales", "navAdmin": "Panel", "navFollowUps": "Seguimiento",
        "signInTitle": "Iniciar sesión", "signInIntro": "Inicie sesión con su cuenta de la universidad.",
        "noProviders": "Este campus aún no tiene un proveedor de inicio de sesión para la web. Pida al equipo de TI que agregue uno.",
        "signInWith": "Iniciar sesión con {0}",
        "demoTitle": "Inicio de sesión de demostración",
        "demoIntro": "Solo en attest dev: entre como una de las personas de demostración, sin contraseña.",
        "errorSummary": "Hay un problema", "requiredNote": "Las preguntas marcadas con * necesitan respuesta.",
        "requiredWord": "obligatoria",
        "errorWord": "Error", "submit": "Enviar mis respuestas", "yes": "Sí", "no": "No",
        "surveyIntro":
            "Responda antes de las {0} para llegar a tiempo. Sus respuestas son privadas: solo se comparte el color de su credencial.",
        "numberHint": "Un número de {0} a {1}", "textHint": "Como máximo {0} caracteres",
        "badgeTitle": "Su credencial", "expired": "vencida", "date": "Fecha", "timeNow": "Hora actual", "validUntil": "Válida hasta",
        "timeLeft": "Tiempo restante", "qrHint": "Muestre este código en la entrada. Cambia cada día; una captura de pantalla no avanza.",
        "answerSurvey": "Responder la encuesta de hoy",
        "notSubmittedDeadline": "Aún no enviada. Envíela antes de las {0} para llegar a tiempo.",
        "alreadySubmitted": "Ya envió las respuestas de hoy. La próxima encuesta abre a las {0}.",
        "colorGreen": "Verde", "colorYellow": "Amarillo", "colorRed": "Rojo", "colorGray": "Sin enviar",
        "historyTitle": "Su historial", "badge": "Credencial", "reason": "Motivo", "submittedAt": "Enviada", "late": "tarde",
        "historyEmpty": "Aún no hay respuestas.", "newest": "Más recientes", "older": "Anteriores",
        "locationsTitle": "Lugares de prueba", "useLocation": "Usar mi ubicación (más cercanos primero)",
        "byName": "Ordenados por nombre. Comparta su ubicación para ver primero los más cercanos.",
        "byDistance": "Los más cercanos primero, desde la ubicación que compartió.",
        "someUnavailable": "Algunas fuentes no respondieron a tiempo:", "hours": "Horario", "phone": "Teléfono", "map": "Mapa",
        "website": "Sitio web",
        "noLocations": "Este campus aún no ha publicado lugares de prueba.", "kmAway": "a {0} km",
        "statsTitle": "Estadísticas del campus",
        "communityLine": "Riesgo en la comunidad de {0}: {1}{2} (al {3}).",
        "communitySummary": "Riesgo: {0}. Tendencia: {1}. Al {2}.",
        "communityTitle": "Casos nuevos en {0}", "communityDesc": "Promedio de 7 días de casos nuevos en {0}, del {1} al {2}",
        "communityPer100k": "promedio de 7 días por 100.000 al día", "communityPerDay": "promedio de 7 días al día",
        "communityNewCases": "Casos nuevos",
        "communitySource": "Fuente: {0}.", "communityStale": "Una copia anterior: la fuente no responde ahora.",
        "communityUnavailable": "Las cifras de la comunidad no se pueden obtener ahora.",
        "risk-low": "bajo", "risk-medium": "medio", "risk-high": "alto", "risk-very-high": "muy alto", "risk-severe": "grave",
        "riskUnknown": "desconocido (sin población)",
        "trend-rising": "en aumento", "trend-falling": "en descenso", "trend-flat": "estable",
        "statsIntro": "Los últimos {0} días en {1}. Los días con menos de {2} respuestas se ocultan para proteger la privacidad.",
        "colorShares": "Colores de credencial por día (porcentaje de respuestas)",
        "symptomShares": "Síntomas informados por día (porcentaje de respuestas)",
        "hiddenDay": "oculto", "percentOf": "{0} %",
        "adminTitle": "Panel", "from": "Desde", "to": "Hasta", "show": "Mostrar", "downloadCSV": "Descargar CSV (agregados)",
        "complianceRate": "Cumplimiento (a tiempo, de los días-miembro activos)", "noData": "sin datos",
        "totals": "{0} enviadas, {1} a tiempo, {2} tarde, {3} faltantes en el período.",
        "pieTitle": "Colores de credencial el {0}", "pieDesc": "Verde {0}, amarillo {1}, rojo {2}.",
        "pieEmpty": "No hubo respuestas el {0}.",
        "barsTitle": "A tiempo, tarde y faltantes por día",
        "barsDesc": "Barras apiladas de {0} días del {1} al {2}; la tabla de abajo tiene todas las cifras.",
        "linesTitle": "Tendencias de síntomas (porcentaje de respuestas)", "symptomCounts": "Síntomas informados por día (cantidad)",
        "linesDesc": "Una línea por síntoma en {0} días; la tabla de abajo tiene todas las cifras.",
        "onTime": "A tiempo", "missing": "Faltantes", "submitted": "Enviadas", "active": "Miembros activos", "count": "Cantidad",
        "percent": "Porcentaje",
        "followUpsTitle": "Seguimiento", "followUpsAudited": "Cada consulta de esta lista queda registrada en el registro de auditoría.",
        "followUpsCaption": "Credenciales rojas y amarillas del {0}", "name": "Nombre", "email": "Correo",
        "followUpsEmpty": "No hay credenciales rojas ni amarillas en esta fecha.", "firstPage": "Primera página",
        "nextPage": "Página siguiente",
        "scanTitle": "Escanear credenciales", "scanReady": "Listo: escanee o pegue una credencial.", "useCamera": "Escanear con la cámara",
        "pasteLabel": "Código de la credencial", "pasteHint": "Pegue el código de la credencial o escríbalo desde la pantalla del miembro.",
        "uploadLabel": "O lea una foto del código", "check": "Comprobar credencial",
        "offlineNote":
            "Una vez cargada esta página, las credenciales se comprueban aquí incluso sin red, con las claves del campus guardadas hasta 12 horas.",
        "verdictGenuine": "Auténtica, de hoy: {0}", "verdictExpired": "No válida: vencida",
        "verdictOtherCampus": "No válida: de otro campus",
        "verdictForged": "No válida: falsificada (la firma no coincide)",
        "verdictUnknownKey": "No válida: firmada con una clave que este campus no tiene",
        "verdictMalformed": "No válida: no es un código de credencial", "verdictNotToday": "No válida: no es la credencial de hoy",
        "verdictOffline": "Comprobada en este dispositivo (sin conexión).",
        "verdictOnline": "Comprobada en este dispositivo y por el servidor.",
        "verdictKeysOld": "Las claves guardadas son demasiado antiguas: conéctese a la red y vuelva a cargar.",
        "verdictNoCode": "No se encontró ningún código en la foto.", "verdictChecking": "Comprobando…",
        "verdictServerDisagrees": "El servidor no acepta esta credencial: {0}",
        "forbiddenTitle": "No permitido",
        "forbidden": "Esta página necesita el rol {0}. Pida a un administrador del campus que se lo asigne.",
        "operatorSessionTitle": "Inicie sesión usted",
        "operatorSession":
            "Esta sesión la creó un operador, no la inició usted: su diario, sus episodios y lo que comparte solo se abren después de que inicie sesión usted. Cierre la sesión y vuelva a iniciarla.",
        "notFoundTitle": "No encontrado", "errorTitle": "Algo salió mal", "signInNeeded": "Inicie sesión para ver esta página.",
        "csrfFailed": "Este formulario venció o vino de otro sitio. Vuelva atrás, recargue la página e inténtelo de nuevo.",
        "signInFailed": "No se pudo iniciar sesión: {0} Inténtelo de nuevo.",
    ]
}
