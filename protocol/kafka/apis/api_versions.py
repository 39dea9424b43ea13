"""ApiVersions (key 18): which API versions the broker speaks."""

from protocol.kafka.schema import Api, F

API = Api(
    key=18,
    name="ApiVersions",
    versions="0-4",
    flexible="3+",
    request=(
        F("client_software_name", "string", "3+", ignorable=True),
        F("client_software_version", "string", "3+", ignorable=True),
    ),
    response=(
        F("error_code", "int16"),
        F(
            "api_keys", "[]", "0+",
            F("api_key", "int16", map_key=True),
            F("min_version", "int16"),
            F("max_version", "int16"),
        ),
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F(
            "supported_features", "[]", "3+",
            F("name", "string", map_key=True),
            F("min_version", "int16"),
            F("max_version", "int16"),
            tag=0, tagged="3+", ignorable=True,
        ),
        F("finalized_features_epoch", "int64", "3+", tag=1, tagged="3+", default=-1, ignorable=True),
        F(
            "finalized_features", "[]", "3+",
            F("name", "string", map_key=True),
            F("max_version_level", "int16"),
            F("min_version_level", "int16"),
            tag=2, tagged="3+", ignorable=True,
        ),
        F("zk_migration_ready", "bool", "3+", tag=3, tagged="3+", default=False, ignorable=True),
    ),
)
