// Identity: users, roles, sessions and OpenID Connect verification (users, user_roles, sessions). Not built yet: see issue 3.
