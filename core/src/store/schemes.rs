//! Writes the scheme registry into the `schemes` table so SQL joins agree with the Rust registry.

use super::StoreError;
use crate::db::Db;
use crate::schema::schemes;
use crate::schemes::SCHEMES;
use diesel::prelude::*;
use diesel::upsert::excluded;

/// Upserts every registered scheme.
pub fn seed(conn: &mut Db) -> Result<(), StoreError> {
    for s in SCHEMES {
        let writable_by = serde_json::to_string(&s.writable_by())?;
        crate::on_backend!(conn, c => diesel::insert_into(schemes::table)
            .values((
                schemes::name.eq(s.name),
                schemes::model_visible.eq(s.model_visible),
                schemes::category.eq(s.category.as_str()),
                schemes::default_scope.eq(s.default_scope.as_str()),
                schemes::writable_by.eq(&writable_by),
            ))
            .on_conflict(schemes::name)
            .do_update()
            .set((
                schemes::model_visible.eq(excluded(schemes::model_visible)),
                schemes::category.eq(excluded(schemes::category)),
                schemes::default_scope.eq(excluded(schemes::default_scope)),
                schemes::writable_by.eq(excluded(schemes::writable_by)),
            ))
            .execute(c))?;
    }
    Ok(())
}
