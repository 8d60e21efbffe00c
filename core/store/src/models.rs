//! Model aliases: `alias → <provider>/<model>`, seeded from the environment and edited by `addModel`/`removeModel`.

use super::StoreError;
use crate::db::Db;
use crate::schema::models;
use diesel::prelude::*;
use rummy_provider::time::Millis;

/// A model alias configured in the environment (`RUMMY_MODEL_<alias>`), seeded into the table
/// at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSeed {
    /// The alias runs name (`RUMMY_MODEL_<alias>`).
    pub alias: String,
    /// `<provider>/<model>`.
    pub actual: String,
    /// `RUMMY_CONTEXT_<alias>`, if set.
    pub context_length: Option<i32>,
    /// `RUMMY_FALLBACK_<alias>`, if set.
    pub fallback: Option<String>,
}

/// A stored model alias.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = models, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct Model {
    /// Primary key.
    pub id: i32,
    /// The alias runs name.
    pub alias: String,
    /// `<provider>/<model>`.
    pub actual: String,
    /// Context window in tokens, when known.
    pub context_length: Option<i32>,
    /// Alias to fall back to on transport failures.
    pub fallback: Option<String>,
    /// Creation time.
    pub created_at: i64,
}

impl Model {
    /// The provider name: the first path segment of `actual`.
    pub fn provider(&self) -> &str {
        self.actual.split('/').next().unwrap_or_default()
    }

    /// The model name sent on the wire: everything after the provider segment.
    pub fn wire_name(&self) -> &str {
        self.actual
            .split_once('/')
            .map_or(self.actual.as_str(), |(_, rest)| rest)
    }
}

/// Adds or replaces an alias; a `None` context length or fallback keeps the stored one.
pub fn upsert(conn: &mut Db, seed: &ModelSeed, now: Millis) -> Result<Model, StoreError> {
    if seed.alias.is_empty() || !seed.actual.contains('/') {
        return Err(StoreError::Invalid(format!(
            "model \"{}\" must map to <provider>/<model>, not \"{}\"",
            seed.alias, seed.actual
        )));
    }
    let existing = by_alias(conn, &seed.alias)?;
    let context_length = seed
        .context_length
        .or(existing.as_ref().and_then(|m| m.context_length));
    let fallback = seed
        .fallback
        .clone()
        .or(existing.as_ref().and_then(|m| m.fallback.clone()));
    Ok(
        crate::on_backend!(conn, c => diesel::insert_into(models::table)
        .values((
            models::alias.eq(&seed.alias),
            models::actual.eq(&seed.actual),
            models::context_length.eq(context_length),
            models::fallback.eq(&fallback),
            models::created_at.eq(now.0),
        ))
        .on_conflict(models::alias)
        .do_update()
        .set((
            models::actual.eq(&seed.actual),
            models::context_length.eq(context_length),
            models::fallback.eq(&fallback),
        ))
        .returning(Model::as_returning())
        .get_result(c))?,
    )
}

/// The alias, if defined.
pub fn by_alias(conn: &mut Db, alias: &str) -> Result<Option<Model>, StoreError> {
    Ok(models::table
        .filter(models::alias.eq(alias))
        .select(Model::as_select())
        .first(conn)
        .optional()?)
}

/// A page of aliases in alias order.
pub fn list(conn: &mut Db, limit: i64, offset: i64) -> Result<Vec<Model>, StoreError> {
    Ok(models::table
        .order(models::alias.asc())
        .limit(limit)
        .offset(offset)
        .select(Model::as_select())
        .load(conn)?)
}

/// Removes an alias; removing an unknown alias is `NotFound`.
pub fn remove(conn: &mut Db, alias: &str) -> Result<(), StoreError> {
    let n = diesel::delete(models::table.filter(models::alias.eq(alias))).execute(conn)?;
    if n == 0 {
        return Err(StoreError::NotFound(format!("model \"{alias}\" not found")));
    }
    Ok(())
}
