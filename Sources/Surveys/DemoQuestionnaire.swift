import AttestPlugins

/// The common daily symptom check, with Spanish prompts: the demo campus's survey and a
/// starting point for real ones (`attest survey show demo --json` prints it).
public enum DemoQuestionnaire {
    public static let draft = QuestionnaireRules.Draft(
        title: "Daily health check",
        titleTranslations: ["es": "Control de salud diario"],
        questions: [
            symptom("fever_chills", "Fever or chills?", "¿Fiebre o escalofríos?"),
            symptom("cough", "New or worsening cough?", "¿Tos nueva o que empeora?"),
            symptom("shortness_of_breath", "Shortness of breath or difficulty breathing?", "¿Falta de aire o dificultad para respirar?"),
            symptom("fatigue", "Unusual fatigue?", "¿Cansancio inusual?"),
            symptom("aches", "Muscle or body aches?", "¿Dolores musculares o corporales?"),
            symptom("headache", "Headache?", "¿Dolor de cabeza?"),
            symptom("taste_smell", "New loss of taste or smell?", "¿Pérdida reciente del gusto o del olfato?"),
            symptom("sore_throat", "Sore throat?", "¿Dolor de garganta?"),
            symptom("congestion", "Congestion or runny nose?", "¿Congestión o secreción nasal?"),
            symptom("nausea", "Nausea or vomiting?", "¿Náuseas o vómitos?"),
            symptom("diarrhea", "Diarrhea?", "¿Diarrea?"),
            Question(
                id: "close_contact", kind: .boolean, prompt: "Close contact with a confirmed case in the last 10 days?",
                translations: ["es": "¿Contacto cercano con un caso confirmado en los últimos 10 días?"]),
            Question(
                id: "positive_test", kind: .boolean, prompt: "A positive test in the last 10 days?",
                translations: ["es": "¿Una prueba positiva en los últimos 10 días?"]),
            Question(
                id: "temperature", kind: .number, required: false, prompt: "Temperature, if you measured it",
                translations: ["es": "Temperatura, si la midió"], min: 34, max: 43, unit: "°C"),
        ])

    static func symptom(_ id: String, _ prompt: String, _ spanish: String) -> Question {
        Question(id: id, kind: .boolean, prompt: prompt, translations: ["es": spanish], symptom: true)
    }
}
