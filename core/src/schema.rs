//! Diesel table definitions, kept equal to `migrations/` by the `schema_matches_migrations` test.
#![allow(missing_docs)]

diesel::table! {
    context_clocks (name) {
        name -> Text,
        version -> BigInt,
    }
}

diesel::table! {
    entries (id) {
        id -> Integer,
        scope -> Text,
        path -> Text,
        scheme -> Nullable<Text>,
        body -> Text,
        attributes -> Text,
        hash -> Text,
        tokens -> Integer,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    file_constraints (id) {
        id -> Integer,
        project_id -> Integer,
        pattern -> Text,
        visibility -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    loops (id) {
        id -> Integer,
        run_id -> Integer,
        sequence -> Integer,
        mode -> Text,
        model -> Text,
        prompt -> Text,
        status -> Integer,
        config -> Text,
        result -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    models (id) {
        id -> Integer,
        alias -> Text,
        actual -> Text,
        context_length -> Nullable<Integer>,
        fallback -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::table! {
    notifications (run_id, seq) {
        run_id -> Integer,
        seq -> Integer,
        method -> Text,
        params -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    projects (id) {
        id -> Integer,
        name -> Text,
        project_root -> Text,
        config_path -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::table! {
    rpc_log (id) {
        id -> Integer,
        project_id -> Nullable<Integer>,
        method -> Text,
        rpc_id -> Nullable<Text>,
        params -> Nullable<Text>,
        result -> Nullable<Text>,
        error -> Nullable<Text>,
        created_at -> BigInt,
        user -> Nullable<Text>,
    }
}

diesel::table! {
    run_views (id) {
        id -> Integer,
        run_id -> Integer,
        entry_id -> Integer,
        loop_id -> Nullable<Integer>,
        turn -> Integer,
        state -> Text,
        outcome -> Nullable<Text>,
        visibility -> Text,
        write_count -> Integer,
        rev -> Integer,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    runs (id) {
        id -> Integer,
        project_id -> Integer,
        parent_run_id -> Nullable<Integer>,
        alias -> Text,
        model -> Text,
        status -> Integer,
        temperature -> Nullable<Double>,
        persona -> Nullable<Text>,
        context_limit -> Nullable<Integer>,
        flags -> Text,
        next_turn -> Integer,
        next_loop -> Integer,
        next_seq -> Integer,
        next_rev -> Integer,
        pushed_rev -> Integer,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    schemes (name) {
        name -> Text,
        model_visible -> Bool,
        category -> Text,
        default_scope -> Text,
        writable_by -> Text,
    }
}

diesel::table! {
    turns (id) {
        id -> Integer,
        run_id -> Integer,
        loop_id -> Integer,
        sequence -> Integer,
        status -> Integer,
        context_tokens -> Integer,
        prompt_tokens -> Integer,
        cached_tokens -> Integer,
        completion_tokens -> Integer,
        reasoning_tokens -> Integer,
        total_tokens -> Integer,
        cost -> Double,
        reasoning_content -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    tokens (id) {
        id -> Integer,
        user_id -> Integer,
        hash -> Text,
        prefix -> Text,
        admin -> Bool,
        projects -> Text,
        created_at -> BigInt,
        expires_at -> Nullable<BigInt>,
        revoked_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    users (id) {
        id -> Integer,
        name -> Text,
        created_at -> BigInt,
    }
}

diesel::joinable!(file_constraints -> projects (project_id));
diesel::joinable!(loops -> runs (run_id));
diesel::joinable!(notifications -> runs (run_id));
diesel::joinable!(rpc_log -> projects (project_id));
diesel::joinable!(run_views -> entries (entry_id));
diesel::joinable!(tokens -> users (user_id));
diesel::joinable!(run_views -> loops (loop_id));
diesel::joinable!(run_views -> runs (run_id));
diesel::joinable!(runs -> projects (project_id));
diesel::joinable!(turns -> loops (loop_id));
diesel::joinable!(turns -> runs (run_id));

diesel::allow_tables_to_appear_in_same_query!(
    context_clocks,
    entries,
    file_constraints,
    loops,
    models,
    notifications,
    projects,
    rpc_log,
    run_views,
    runs,
    schemes,
    tokens,
    turns,
    users,
);
