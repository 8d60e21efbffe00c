//! Who a connection acts for (docs/design/team.md): the machine's owner while no token exists on a
//! loopback server, otherwise the holder of a token — a user, admin or member, with the
//! projects granted to them.

/// A token's holder, as the token said when it was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's id (revoking it ends this principal's connections).
    pub token_id: i32,
    /// The user's name (what the audit records).
    pub user: String,
    /// Admins create projects and manage models, tokens, retention and ceilings.
    pub admin: bool,
    /// The projects a member token opens (admins open every project).
    pub projects: Vec<String>,
}

/// Who a connection acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// No token exists and the server listens on loopback: one person on one machine, who
    /// may do everything, as before tokens existed.
    Owner,
    /// The holder of a valid token.
    Holder(Principal),
}

impl Caller {
    /// Whether the caller may use admin methods and create projects.
    pub fn is_admin(&self) -> bool {
        match self {
            Caller::Owner => true,
            Caller::Holder(p) => p.admin,
        }
    }

    /// Whether the caller may open the project `name` (existing or, for admins, new).
    pub fn may_open(&self, name: &str) -> bool {
        match self {
            Caller::Owner => true,
            Caller::Holder(p) => p.admin || p.projects.iter().any(|g| g == name),
        }
    }

    /// The user's name, when a token names one.
    pub fn user(&self) -> Option<&str> {
        match self {
            Caller::Owner => None,
            Caller::Holder(p) => Some(&p.user),
        }
    }

    /// The token behind the caller, if any.
    pub fn token_id(&self) -> Option<i32> {
        match self {
            Caller::Owner => None,
            Caller::Holder(p) => Some(p.token_id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(admin: bool, projects: &[&str]) -> Caller {
        Caller::Holder(Principal {
            token_id: 1,
            user: "alice".into(),
            admin,
            projects: projects.iter().map(|p| (*p).to_owned()).collect(),
        })
    }

    /// The owner and admins open everything; members only what they were granted.
    #[test]
    fn grants_decide_what_opens() {
        let table = [
            (Caller::Owner, "web", true, true),
            (holder(true, &[]), "web", true, true),
            (holder(false, &["web", "api"]), "api", true, false),
            (holder(false, &["web"]), "api", false, false),
        ];
        for (caller, project, opens, admin) in table {
            assert_eq!(
                (caller.may_open(project), caller.is_admin()),
                (opens, admin),
                "{caller:?} {project}"
            );
        }
        assert_eq!(holder(false, &[]).user(), Some("alice"));
        assert_eq!(Caller::Owner.user(), None);
    }
}
