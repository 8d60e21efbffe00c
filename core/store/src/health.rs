//! The health probe: one row rewritten to prove the database takes writes (`/health`,
//! `server/doctor`).

use super::StoreError;
use crate::db::Db;
use crate::schema::health_probe;
use diesel::prelude::*;
use diesel::upsert::excluded;
use rummy_provider::time::Millis;

/// Rewrites the probe's row with `now`: in a write that commits, this proves the database
/// writable (the disk has room, the file and its directory are writable, the writer runs).
pub fn probe(conn: &mut Db, now: Millis) -> Result<(), StoreError> {
    crate::on_backend!(conn, c => diesel::insert_into(health_probe::table)
        .values((health_probe::id.eq(1), health_probe::checked_at.eq(now.0)))
        .on_conflict(health_probe::id)
        .do_update()
        .set(health_probe::checked_at.eq(excluded(health_probe::checked_at)))
        .execute(c))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use pretty_assertions::assert_eq;

    /// The probe keeps one row, holding the last time it ran.
    #[test]
    fn the_probe_rewrites_one_row() {
        let mut conn = testing::memory();
        probe(&mut conn, Millis(5)).unwrap();
        probe(&mut conn, Millis(9)).unwrap();
        let rows: Vec<(i32, i64)> = health_probe::table
            .select((health_probe::id, health_probe::checked_at))
            .load(&mut conn)
            .unwrap();
        assert_eq!(rows, vec![(1, 9)]);
    }
}
