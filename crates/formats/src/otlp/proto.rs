//! The messages of OpenTelemetry's profiles signal as kiln writes them, pinned to
//! opentelemetry-proto **v1.8.0** (`opentelemetry/proto/collector/profiles/v1development/
//! profiles_service.proto`, `profiles/v1development/profiles.proto`,
//! `common/v1/common.proto`, `resource/v1/resource.proto`), as prost derives them: field
//! numbers and types exactly as those files declare. The profiles signal is in
//! development: later versions of the .proto change these messages.
//!
//! Messages and fields kiln does not write (links' contents, entity references,
//! original payloads) are left out, and of the service's answers only what kiln reports
//! (the partial success, an error's message) is here; a decoder skips what it
//! does not know and reads absent fields as their zero values.
#![allow(missing_docs)]

/// `collector.profiles.v1development.ExportProfilesServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportProfilesServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_profiles: Vec<ResourceProfiles>,
    /// The tables every profile of the request indexes into.
    #[prost(message, optional, tag = "2")]
    pub dictionary: Option<ProfilesDictionary>,
}

/// Every table's first element is its zero value: index 0 means "not set".
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProfilesDictionary {
    #[prost(message, repeated, tag = "1")]
    pub mapping_table: Vec<Mapping>,
    #[prost(message, repeated, tag = "2")]
    pub location_table: Vec<Location>,
    #[prost(message, repeated, tag = "3")]
    pub function_table: Vec<Function>,
    #[prost(message, repeated, tag = "4")]
    pub link_table: Vec<Link>,
    /// `string_table[0]` is "".
    #[prost(string, repeated, tag = "5")]
    pub string_table: Vec<String>,
    #[prost(message, repeated, tag = "6")]
    pub attribute_table: Vec<KeyValueAndUnit>,
    #[prost(message, repeated, tag = "7")]
    pub stack_table: Vec<Stack>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceProfiles {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_profiles: Vec<ScopeProfiles>,
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `resource.v1.Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "2")]
    pub dropped_attributes_count: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeProfiles {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub profiles: Vec<Profile>,
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `common.v1.InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "4")]
    pub dropped_attributes_count: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// The type and unit of every sample's value (one value per sample in v1.8.0).
    #[prost(message, optional, tag = "1")]
    pub sample_type: Option<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(uint64, tag = "4")]
    pub duration_nano: u64,
    #[prost(message, optional, tag = "5")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "6")]
    pub period: i64,
    #[prost(int32, repeated, tag = "7")]
    pub comment_strindices: Vec<i32>,
    /// 16 bytes; all zeroes (or empty) is no id.
    #[prost(bytes = "vec", tag = "8")]
    pub profile_id: Vec<u8>,
    #[prost(uint32, tag = "9")]
    pub dropped_attributes_count: u32,
    #[prost(string, tag = "10")]
    pub original_payload_format: String,
    #[prost(bytes = "vec", tag = "11")]
    pub original_payload: Vec<u8>,
    #[prost(int32, repeated, tag = "12")]
    pub attribute_indices: Vec<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Link {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
}

/// `AggregationTemporality`: 0 unspecified, 1 delta, 2 cumulative.
pub(crate) const AGGREGATION_TEMPORALITY_DELTA: i32 = 1;

#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct ValueType {
    #[prost(int32, tag = "1")]
    pub type_strindex: i32,
    #[prost(int32, tag = "2")]
    pub unit_strindex: i32,
    #[prost(int32, tag = "3")]
    pub aggregation_temporality: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(int32, tag = "1")]
    pub stack_index: i32,
    #[prost(int64, repeated, tag = "2")]
    pub values: Vec<i64>,
    #[prost(int32, repeated, tag = "3")]
    pub attribute_indices: Vec<i32>,
    #[prost(int32, tag = "4")]
    pub link_index: i32,
    #[prost(fixed64, repeated, tag = "5")]
    pub timestamps_unix_nano: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub memory_start: u64,
    #[prost(uint64, tag = "2")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "3")]
    pub file_offset: u64,
    #[prost(int32, tag = "4")]
    pub filename_strindex: i32,
    #[prost(int32, repeated, tag = "5")]
    pub attribute_indices: Vec<i32>,
}

/// Leaf first.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct Stack {
    #[prost(int32, repeated, tag = "1")]
    pub location_indices: Vec<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(int32, tag = "1")]
    pub mapping_index: i32,
    #[prost(uint64, tag = "2")]
    pub address: u64,
    /// Innermost first: the inlined callee, then its callers.
    #[prost(message, repeated, tag = "3")]
    pub line: Vec<Line>,
    #[prost(int32, repeated, tag = "4")]
    pub attribute_indices: Vec<i32>,
}

#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Line {
    #[prost(int32, tag = "1")]
    pub function_index: i32,
    #[prost(int64, tag = "2")]
    pub line: i64,
    #[prost(int64, tag = "3")]
    pub column: i64,
}

#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Function {
    #[prost(int32, tag = "1")]
    pub name_strindex: i32,
    #[prost(int32, tag = "2")]
    pub system_name_strindex: i32,
    #[prost(int32, tag = "3")]
    pub filename_strindex: i32,
    #[prost(int64, tag = "4")]
    pub start_line: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValueAndUnit {
    #[prost(int32, tag = "1")]
    pub key_strindex: i32,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
    #[prost(int32, tag = "3")]
    pub unit_strindex: i32,
}

/// `common.v1.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `common.v1.AnyValue`: kiln writes strings and integers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    #[prost(oneof = "any_value::Value", tags = "1, 3")]
    pub value: Option<any_value::Value>,
}

/// `AnyValue`'s oneof.
pub mod any_value {
    /// The value.
    #[derive(Clone, PartialEq, Eq, Hash, prost::Oneof)]
    pub enum Value {
        #[prost(string, tag = "1")]
        StringValue(String),
        #[prost(int64, tag = "3")]
        IntValue(i64),
    }
}

/// `collector.profiles.v1development.ExportProfilesServiceResponse`: the answer to an
/// export.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportProfilesServiceResponse {
    #[prost(message, optional, tag = "1")]
    pub partial_success: Option<ExportProfilesPartialSuccess>,
}

/// `collector.profiles.v1development.ExportProfilesPartialSuccess`: what the receiver
/// refused of a request it otherwise took.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportProfilesPartialSuccess {
    #[prost(int64, tag = "1")]
    pub rejected_profiles: i64,
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// `google.rpc.Status`: the body of an OTLP/HTTP error answer (code and message only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}
