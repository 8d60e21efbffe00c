//! [`PgConn`]: diesel-async's PostgreSQL connection made synchronous, as a `Db` variant.

use crate::raw::{Raw, Target};
use crate::runtime::{block_on, Parked};
use diesel::connection::{
    CacheSize, Connection, ConnectionSealed, DefaultLoadingMode, Instrumentation, LoadConnection,
    MultiConnectionHelper, SimpleConnection, TransactionManager, TransactionManagerStatus,
};
use diesel::pg::{
    FailedToLookupTypeError, Pg, PgMetadataCacheKey, PgMetadataLookup, PgTypeMetadata,
};
use diesel::query_builder::{Query, QueryFragment, QueryId};
use diesel::{ConnectionError, ConnectionResult, QueryResult};
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_async::AsyncPgConnection;
use std::any::Any;
use std::borrow::Cow;

/// The synchronous wrapper, waiting through this crate's runtime.
type Inner = AsyncConnectionWrapper<AsyncPgConnection, Parked>;

/// One PostgreSQL connection, used like any synchronous diesel connection. Boxed: the store's
/// `Db` holds either this or an SQLite connection, which is far smaller.
pub struct PgConn(Box<Inner>);

impl PgConn {
    /// Connects to `url` (`postgres://user:password@host:port/database?options`), with TLS as
    /// its `sslmode` and `sslrootcert` say (see [`ConnectOptions`](crate::ConnectOptions)).
    ///
    /// # Errors
    /// A URL that cannot be used, or the server's refusal, in the server's words.
    pub fn connect(url: &str) -> ConnectionResult<PgConn> {
        let target = Target::from_url(url).map_err(ConnectionError::BadConnection)?;
        let connected = block_on(async move {
            let (client, raw) = target
                .connect()
                .await
                .map_err(ConnectionError::BadConnection)?;
            match raw {
                Raw::Plain(connection) => {
                    AsyncPgConnection::try_from_client_and_connection(client, *connection).await
                }
                Raw::Tls(connection) => {
                    AsyncPgConnection::try_from_client_and_connection(client, *connection).await
                }
            }
        })
        .map_err(ConnectionError::BadConnection)??;
        Ok(PgConn(Box::new(Inner::from(connected))))
    }
}

impl SimpleConnection for PgConn {
    fn batch_execute(&mut self, query: &str) -> QueryResult<()> {
        self.0.batch_execute(query)
    }
}

impl ConnectionSealed for PgConn {}

/// The wrapper's transaction manager, seen through [`PgConn`].
pub struct PgTransactions;

/// The wrapper's own transaction manager.
type InnerTransactions = <Inner as Connection>::TransactionManager;

impl TransactionManager<PgConn> for PgTransactions {
    type TransactionStateData =
        <InnerTransactions as TransactionManager<Inner>>::TransactionStateData;

    fn begin_transaction(conn: &mut PgConn) -> QueryResult<()> {
        InnerTransactions::begin_transaction(&mut conn.0)
    }

    fn rollback_transaction(conn: &mut PgConn) -> QueryResult<()> {
        InnerTransactions::rollback_transaction(&mut conn.0)
    }

    fn commit_transaction(conn: &mut PgConn) -> QueryResult<()> {
        InnerTransactions::commit_transaction(&mut conn.0)
    }

    fn transaction_manager_status_mut(conn: &mut PgConn) -> &mut TransactionManagerStatus {
        InnerTransactions::transaction_manager_status_mut(&mut conn.0)
    }

    fn is_broken_transaction_manager(conn: &mut PgConn) -> bool {
        InnerTransactions::is_broken_transaction_manager(&mut conn.0)
    }
}

impl Connection for PgConn {
    type Backend = Pg;
    type TransactionManager = PgTransactions;

    fn establish(url: &str) -> ConnectionResult<Self> {
        PgConn::connect(url)
    }

    fn execute_returning_count<T>(&mut self, source: &T) -> QueryResult<usize>
    where
        T: QueryFragment<Pg> + QueryId,
    {
        self.0.execute_returning_count(source)
    }

    fn transaction_state(
        &mut self,
    ) -> &mut <PgTransactions as TransactionManager<PgConn>>::TransactionStateData {
        self.0.transaction_state()
    }

    fn instrumentation(&mut self) -> &mut dyn Instrumentation {
        self.0.instrumentation()
    }

    fn set_instrumentation(&mut self, instrumentation: impl Instrumentation) {
        self.0.set_instrumentation(instrumentation);
    }

    fn set_prepared_statement_cache_size(&mut self, size: CacheSize) {
        self.0.set_prepared_statement_cache_size(size);
    }
}

impl LoadConnection<DefaultLoadingMode> for PgConn {
    type Cursor<'conn, 'query>
        = <Inner as LoadConnection<DefaultLoadingMode>>::Cursor<'conn, 'query>
    where
        Self: 'conn;
    type Row<'conn, 'query>
        = <Inner as LoadConnection<DefaultLoadingMode>>::Row<'conn, 'query>
    where
        Self: 'conn;

    fn load<'conn, 'query, T>(
        &'conn mut self,
        source: T,
    ) -> QueryResult<Self::Cursor<'conn, 'query>>
    where
        T: Query + QueryFragment<Pg> + QueryId + 'query,
        Pg: diesel::expression::QueryMetadata<T::SqlType>,
    {
        self.0.load(source)
    }
}

impl diesel::r2d2::R2D2Connection for PgConn {
    fn ping(&mut self) -> QueryResult<()> {
        self.0.ping()
    }

    fn is_broken(&mut self) -> bool {
        diesel::r2d2::R2D2Connection::is_broken(&mut *self.0)
    }
}

impl diesel::migration::MigrationConnection for PgConn {
    fn setup(&mut self) -> QueryResult<usize> {
        self.0.setup()
    }
}

/// The type look-up queries through the store's `Db` get. diesel-async's own is private and
/// cannot pass through `dyn Any` as `MultiConnectionHelper` needs; the store binds only
/// built-in types, whose type ids are fixed and never looked up, so this one refuses any name.
struct BuiltInTypesOnly;

impl PgMetadataLookup for BuiltInTypesOnly {
    fn lookup_type(&mut self, type_name: &str, schema: Option<&str>) -> PgTypeMetadata {
        let key = PgMetadataCacheKey::new(
            schema.map(|s| Cow::Owned(s.to_string())),
            Cow::Owned(type_name.to_string()),
        );
        PgTypeMetadata::from_result(Err(FailedToLookupTypeError::new(key)))
    }
}

impl MultiConnectionHelper for PgConn {
    fn to_any<'a>(
        _lookup: &mut <Pg as diesel::sql_types::TypeMetadata>::MetadataLookup,
    ) -> &mut (dyn Any + 'a) {
        // A box of a zero-sized type allocates nothing, so leaking it leaks nothing.
        Box::leak(Box::new(BuiltInTypesOnly))
    }

    fn from_any(
        lookup: &mut dyn Any,
    ) -> Option<&mut <Pg as diesel::sql_types::TypeMetadata>::MetadataLookup> {
        lookup
            .downcast_mut::<BuiltInTypesOnly>()
            .map(|l| l as &mut dyn PgMetadataLookup)
    }
}
