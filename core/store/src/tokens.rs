//! Users and their tokens: a token is shown once, when it is made, and stored only
//! as the SHA-256 of its text; checking one looks its hash up.
//!
//! The secret's 32 random bytes come from the caller (core draws no randomness, as it reads
//! no clock), so tests can make tokens they know.

use super::entries::hex_sha256;
use super::StoreError;
use crate::db::Db;
use crate::principal::Principal;
use crate::schema::{tokens, users};
use diesel::prelude::*;
use rummy_provider::time::Millis;

/// What every token's text starts with, so a leaked one is recognisable (secret scanners,
/// people reading logs).
pub const TOKEN_PREFIX: &str = "rummy_";

/// How many characters of a token a listing shows to tell tokens apart.
const SHOWN_CHARS: usize = TOKEN_PREFIX.len() + 8;

/// A token to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// The user it is for (created on first use).
    pub user: String,
    /// Whether it is an admin token.
    pub admin: bool,
    /// The projects a member token opens.
    pub projects: Vec<String>,
    /// When it stops working, if ever.
    pub expires_at: Option<Millis>,
}

/// A token as listings show it: never its text or hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    /// Its id.
    pub id: i32,
    /// Its user.
    pub user: String,
    /// Its first characters.
    pub prefix: String,
    /// Whether it is an admin token.
    pub admin: bool,
    /// The projects it opens (admins open every project).
    pub projects: Vec<String>,
    /// When it was made (ms since the epoch).
    pub created_at: i64,
    /// When it stops working.
    pub expires_at: Option<i64>,
    /// When it was revoked.
    pub revoked_at: Option<i64>,
}

/// Why a token does not let its holder in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// No token has this text.
    #[error("the token is not valid")]
    Unknown,
    /// It was revoked.
    #[error("the token was revoked")]
    Revoked,
    /// It expired.
    #[error("the token expired")]
    Expired,
}

type Row = (
    i32,
    String,
    String,
    bool,
    String,
    i64,
    Option<i64>,
    Option<i64>,
);

fn info((id, user, prefix, admin, projects, created_at, expires_at, revoked_at): Row) -> TokenInfo {
    TokenInfo {
        id,
        user,
        prefix,
        admin,
        projects: serde_json::from_str(&projects).unwrap_or_default(),
        created_at,
        expires_at,
        revoked_at,
    }
}

fn columns() -> (
    tokens::id,
    users::name,
    tokens::prefix,
    tokens::admin,
    tokens::projects,
    tokens::created_at,
    tokens::expires_at,
    tokens::revoked_at,
) {
    (
        tokens::id,
        users::name,
        tokens::prefix,
        tokens::admin,
        tokens::projects,
        tokens::created_at,
        tokens::expires_at,
        tokens::revoked_at,
    )
}

/// The token text for 32 secret bytes.
pub fn token_text(secret: &[u8; 32]) -> String {
    let mut text = String::with_capacity(TOKEN_PREFIX.len() + 64);
    text.push_str(TOKEN_PREFIX);
    for b in secret {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

/// Whether any token was ever made: from then on every connection needs one (revoking them
/// all does not reopen the server).
pub fn any(conn: &mut Db) -> Result<bool, StoreError> {
    Ok(diesel::select(diesel::dsl::exists(tokens::table.select(tokens::id))).get_result(conn)?)
}

/// Makes a token from `secret` for `new.user` (made on first use); answers the token's text —
/// the only time it exists outside its holder's hands — and what listings show of it.
pub fn create(
    conn: &mut Db,
    new: &NewToken,
    secret: &[u8; 32],
    now: Millis,
) -> Result<(String, TokenInfo), StoreError> {
    let user = new.user.trim();
    if user.is_empty() || user.chars().any(char::is_control) {
        return Err(StoreError::Invalid("user: must be a non-empty name".into()));
    }
    if let Some(project) = new.projects.iter().find(|p| p.trim().is_empty()) {
        return Err(StoreError::Invalid(format!(
            "projects: {project:?} is not a project name"
        )));
    }
    crate::on_backend!(conn, c => diesel::insert_into(users::table)
        .values((users::name.eq(user), users::created_at.eq(now.0)))
        .on_conflict(users::name)
        .do_nothing()
        .execute(c))?;
    let user_id: i32 = users::table
        .filter(users::name.eq(user))
        .select(users::id)
        .first(conn)?;
    let text = token_text(secret);
    let projects = serde_json::to_string(&new.projects).unwrap_or_else(|_| "[]".into());
    let id: i32 = diesel::insert_into(tokens::table)
        .values((
            tokens::user_id.eq(user_id),
            tokens::hash.eq(hex_sha256(&text)),
            tokens::prefix.eq(&text[..SHOWN_CHARS]),
            tokens::admin.eq(new.admin),
            tokens::projects.eq(projects),
            tokens::created_at.eq(now.0),
            tokens::expires_at.eq(new.expires_at.map(|m| m.0)),
        ))
        .returning(tokens::id)
        .get_result(conn)?;
    let made = by_id(conn, id)?;
    Ok((text, made))
}

fn by_id(conn: &mut Db, id: i32) -> Result<TokenInfo, StoreError> {
    tokens::table
        .inner_join(users::table)
        .filter(tokens::id.eq(id))
        .select(columns())
        .first::<Row>(conn)
        .optional()?
        .map(info)
        .ok_or_else(|| StoreError::NotFound(format!("token {id} not found")))
}

/// Every token, oldest first.
pub fn list(conn: &mut Db) -> Result<Vec<TokenInfo>, StoreError> {
    Ok(tokens::table
        .inner_join(users::table)
        .order(tokens::id.asc())
        .select(columns())
        .load::<Row>(conn)?
        .into_iter()
        .map(info)
        .collect())
}

/// Revokes the token with this id, or the one whose text starts with `key` (its listed prefix);
/// answers it. Revoking a revoked token keeps its first revocation time.
pub fn revoke(conn: &mut Db, key: &str, now: Millis) -> Result<TokenInfo, StoreError> {
    let matching: Vec<i32> = match key.parse::<i32>() {
        Ok(id) => tokens::table
            .filter(tokens::id.eq(id))
            .select(tokens::id)
            .load(conn)?,
        Err(_) if key.len() >= SHOWN_CHARS => tokens::table
            .filter(tokens::prefix.eq(&key[..SHOWN_CHARS]))
            .select(tokens::id)
            .load(conn)?,
        Err(_) => Vec::new(),
    };
    let id = match matching.as_slice() {
        [id] => *id,
        [] => return Err(StoreError::NotFound(format!("no token {key}"))),
        _ => {
            return Err(StoreError::Conflict(format!(
                "{key} names several tokens; revoke by id"
            )))
        }
    };
    diesel::update(tokens::table.find(id).filter(tokens::revoked_at.is_null()))
        .set(tokens::revoked_at.eq(now.0))
        .execute(conn)?;
    by_id(conn, id)
}

/// Who a token's text lets in, now.
pub fn check(
    conn: &mut Db,
    text: &str,
    now: Millis,
) -> Result<Result<Principal, Refused>, StoreError> {
    let found: Option<Row> = tokens::table
        .inner_join(users::table)
        .filter(tokens::hash.eq(hex_sha256(text.trim())))
        .select(columns())
        .first(conn)
        .optional()?;
    let Some(token) = found.map(info) else {
        return Ok(Err(Refused::Unknown));
    };
    if token.revoked_at.is_some() {
        return Ok(Err(Refused::Revoked));
    }
    if token.expires_at.is_some_and(|at| at <= now.0) {
        return Ok(Err(Refused::Expired));
    }
    Ok(Ok(Principal {
        token_id: token.id,
        user: token.user,
        admin: token.admin,
        projects: token.projects,
    }))
}

/// Of `ids`, the tokens no longer valid at `now` (revoked or expired): their connections end.
pub fn lapsed(conn: &mut Db, ids: &[i32], now: Millis) -> Result<Vec<i32>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(tokens::table
        .filter(tokens::id.eq_any(ids))
        .filter(
            tokens::revoked_at
                .is_not_null()
                .or(tokens::expires_at.le(now.0)),
        )
        .select(tokens::id)
        .load(conn)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::memory;
    use pretty_assertions::assert_eq;

    const NOW: Millis = Millis(1_000_000);

    fn member(user: &str, projects: &[&str]) -> NewToken {
        NewToken {
            user: user.into(),
            admin: false,
            projects: projects.iter().map(|p| (*p).to_owned()).collect(),
            expires_at: None,
        }
    }

    /// A made token checks in as its user with its grants; only its hash and prefix are stored.
    #[test]
    fn a_token_lets_its_holder_in() {
        let mut conn = memory();
        assert!(!any(&mut conn).unwrap());
        let (text, made) = create(&mut conn, &member("alice", &["web"]), &[7; 32], NOW).unwrap();
        assert_eq!(text, format!("rummy_{}", "07".repeat(32)));
        assert_eq!(made.prefix, "rummy_07070707");
        assert!(any(&mut conn).unwrap());
        assert_eq!(
            check(&mut conn, &text, NOW).unwrap(),
            Ok(Principal {
                token_id: made.id,
                user: "alice".into(),
                admin: false,
                projects: vec!["web".into()],
            })
        );
        let stored: Vec<String> = tokens::table.select(tokens::hash).load(&mut conn).unwrap();
        assert_eq!(stored, vec![hex_sha256(&text)]);
        assert_eq!(
            check(&mut conn, "rummy_nope", NOW).unwrap(),
            Err(Refused::Unknown)
        );
    }

    /// Revoked and expired tokens are refused and reported as lapsed; others are not.
    #[test]
    fn revoked_and_expired_tokens_lapse() {
        let mut conn = memory();
        let (a, a_info) = create(&mut conn, &member("alice", &[]), &[1; 32], NOW).unwrap();
        let mut expiring = member("bob", &[]);
        expiring.expires_at = Some(Millis(NOW.0 + 10));
        let (b, b_info) = create(&mut conn, &expiring, &[2; 32], NOW).unwrap();
        let (_, c_info) = create(&mut conn, &member("carol", &[]), &[3; 32], NOW).unwrap();
        let ids = [a_info.id, b_info.id, c_info.id];
        assert_eq!(lapsed(&mut conn, &ids, NOW).unwrap(), Vec::<i32>::new());
        let revoked = revoke(&mut conn, &a_info.prefix, Millis(NOW.0 + 1)).unwrap();
        assert_eq!(revoked.revoked_at, Some(NOW.0 + 1));
        assert_eq!(check(&mut conn, &a, NOW).unwrap(), Err(Refused::Revoked));
        assert_eq!(
            check(&mut conn, &b, Millis(NOW.0 + 10)).unwrap(),
            Err(Refused::Expired)
        );
        assert_eq!(
            lapsed(&mut conn, &ids, Millis(NOW.0 + 10)).unwrap(),
            vec![a_info.id, b_info.id]
        );
        let again = revoke(&mut conn, &a_info.id.to_string(), Millis(NOW.0 + 5)).unwrap();
        assert_eq!(again.revoked_at, Some(NOW.0 + 1));
        assert!(matches!(
            revoke(&mut conn, "rummy_ffffffff", NOW),
            Err(StoreError::NotFound(_))
        ));
        assert_eq!(list(&mut conn).unwrap().len(), 3);
    }

    /// A token needs a user's name; a project grant needs a name.
    #[test]
    fn tokens_need_names() {
        let mut conn = memory();
        for bad in [member(" ", &[]), member("alice", &[""])] {
            assert!(matches!(
                create(&mut conn, &bad, &[0; 32], NOW),
                Err(StoreError::Invalid(_))
            ));
        }
    }
}
