// Surveys: questionnaires, attestations, badges and statistics. Not built yet: see issues 4 and 6.
