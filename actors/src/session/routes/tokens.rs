//! The admin's methods on tokens: `token/create`, `token/list`, `token/revoke`.

use crate::clock::now;
use crate::errors::{internal, Error};
use crate::session::auth::{caller, require_admin};
use crate::session::call::Call;
use crate::tokens::Sweep;
use rummy_core::wire::params::{NoParams, TokenCreateParams, TokenRevokeParams};
use rummy_core::wire::results::{MadeToken, TokenInfo};
use rummy_provider::time::Millis;
use rummy_store::tokens::{self, NewToken};

/// `token/create`: a new token, whose text is answered this once.
pub async fn token_create(call: Call, p: TokenCreateParams) -> Result<MadeToken, Error> {
    require_admin(&caller(&call, None).await?, "token/create")?;
    let at = now();
    let new = NewToken {
        user: p.user,
        admin: p.admin,
        projects: p.projects,
        expires_at: p
            .expires_in_days
            .map(|days| Millis(at.0.saturating_add(i64::from(days) * 86_400_000))),
    };
    let secret = secret()?;
    let (text, made) = call
        .write(move |c| tokens::create(c, &new, &secret, at))
        .await?;
    tracing::info!(user = %made.user, token = %made.prefix, admin = made.admin, "token created");
    Ok(MadeToken {
        token: text,
        info: shown(made),
    })
}

/// `token/list`: every token, without its text.
pub async fn token_list(call: Call, _: NoParams) -> Result<Vec<TokenInfo>, Error> {
    require_admin(&caller(&call, None).await?, "token/list")?;
    let list = call.read(tokens::list).await?;
    Ok(list.into_iter().map(shown).collect())
}

/// `token/revoke`: revokes a token and closes the connections it opened.
pub async fn token_revoke(call: Call, p: TokenRevokeParams) -> Result<TokenInfo, Error> {
    require_admin(&caller(&call, None).await?, "token/revoke")?;
    let revoked = call
        .write(move |c| tokens::revoke(c, &p.token, now()))
        .await?;
    tracing::info!(user = %revoked.user, token = %revoked.prefix, "token revoked");
    call.deps.tokens.do_send(Sweep);
    Ok(shown(revoked))
}

/// A stored token as listings show it.
fn shown(token: tokens::TokenInfo) -> TokenInfo {
    TokenInfo {
        id: i64::from(token.id),
        user: token.user,
        prefix: token.prefix,
        admin: token.admin,
        projects: token.projects,
        created_at: token.created_at,
        expires_at: token.expires_at,
        revoked_at: token.revoked_at,
    }
}

/// 256 random bits for a new token; the server's failure when the system has none to give.
fn secret() -> Result<[u8; 32], Error> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| internal(&e))?;
    Ok(secret)
}
