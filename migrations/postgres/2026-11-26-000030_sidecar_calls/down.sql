DROP TABLE sidecar_calls;
