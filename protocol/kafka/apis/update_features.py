"""UpdateFeatures (key 57, KIP-584): change the cluster's finalized feature levels."""

from protocol.kafka.schema import Api, F

# v0 names a downgrade with allow_downgrade, v1 with upgrade_type (1 upgrade, 2 safe downgrade,
# 3 unsafe downgrade) and adds validate_only; v2 answers without the per-feature results.
API = Api(
    key=57,
    name="UpdateFeatures",
    versions="0-2",
    flexible="0+",
    request=(
        F("timeout_ms", "int32", default=60000),
        F(
            "feature_updates", "[]", "0+",
            F("feature", "string", map_key=True),
            F("max_version_level", "int16"),
            F("allow_downgrade", "bool", "0"),
            F("upgrade_type", "int8", "1+", default=1),
        ),
        F("validate_only", "bool", "1+", default=False),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F(
            "results", "[]", "0-1",
            F("feature", "string", map_key=True),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            ignorable=True,
        ),
    ),
)
