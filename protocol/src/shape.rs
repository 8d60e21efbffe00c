//! What a params type accepts, read from its own `Deserialize`: its wire names, which of them
//! are aliases of one field, each field's JSON type and whether a call fails without it. The
//! catalogue (`discover`) is checked against it, so what is documented is what is parsed.
//!
//! No derive or schema crate is needed: serde's derived code tells all of it to a deserializer
//! that asks. The field list is what it hands to `deserialize_struct`; a field's type is the
//! `deserialize_*` its value asks for; two names are one field when giving both is a duplicate;
//! a field is required when a map holding every other field fails for want of it.

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::cell::Cell;

/// One field of a params type as the wire sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldShape {
    /// Its wire name.
    pub name: &'static str,
    /// Other names it is read under.
    pub aliases: Vec<&'static str>,
    /// Its JSON type: `string`, `integer`, `number`, `boolean`, `object`, `array` (`any` for a
    /// value of any type).
    pub ty: &'static str,
    /// Whether a call without it is refused (-32602) before its handler runs.
    pub required: bool,
}

/// The wire names a params type accepts, aliases included, in declaration order: read from
/// the type's own `Deserialize` (the field list serde hands to `deserialize_struct`).
pub fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let fields = Cell::new(&[][..]);
    // The probe fails every deserialisation once it has the field list; the error is expected.
    let _ = T::deserialize(FieldList(&fields));
    fields.get()
}

/// Every field of a params type, in declaration order, with its aliases, type and whether it
/// is required.
pub fn shape_of<'de, T: Deserialize<'de>>() -> Vec<FieldShape> {
    let names = fields_of::<T>();
    // A field's aliases follow its name in serde's list; giving two names of one field at once
    // is a duplicate.
    let mut groups: Vec<Vec<&'static str>> = Vec::new();
    for name in names {
        match groups.last_mut() {
            Some(group) if matches!(read::<T>(&[group[0], name]), Err(Probe::Duplicate)) => {
                group.push(name);
            }
            _ => groups.push(vec![name]),
        }
    }
    let primaries: Vec<&'static str> = groups.iter().map(|g| g[0]).collect();
    groups
        .iter()
        .map(|group| {
            let name = group[0];
            let ty = Cell::new("any");
            let _ = T::deserialize(Fields {
                keys: &[name],
                at: 0,
                ty: Some(&ty),
            });
            let others: Vec<&'static str> =
                primaries.iter().copied().filter(|p| *p != name).collect();
            let required = matches!(read::<T>(&others), Err(Probe::Missing(f)) if f == name);
            FieldShape {
                name,
                aliases: group[1..].to_vec(),
                ty: ty.get(),
                required,
            }
        })
        .collect()
}

/// Reads a `T` from a map holding `keys`, each with a plausible value of its type.
fn read<'de, T: Deserialize<'de>>(keys: &[&'static str]) -> Result<T, Probe> {
    T::deserialize(Fields {
        keys,
        at: 0,
        ty: None,
    })
}

/// How a probe ends: what serde's derived code said.
#[derive(Debug)]
enum Probe {
    /// A required field is missing.
    Missing(&'static str),
    /// A field was given twice (under two of its names).
    Duplicate,
    /// Anything else (the probe's own stop included).
    Other,
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Probe {}

impl de::Error for Probe {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Probe::Other
    }

    fn missing_field(field: &'static str) -> Self {
        Probe::Missing(field)
    }

    fn duplicate_field(_: &'static str) -> Self {
        Probe::Duplicate
    }
}

/// A deserializer that only records the field list of the struct asked of it.
struct FieldList<'a>(&'a Cell<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for FieldList<'_> {
    type Error = Probe;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probe> {
        Err(Probe::Other)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Probe> {
        self.0.set(fields);
        Err(Probe::Other)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// A params object holding `keys`, each with a [`Plausible`] value; with `ty`, the first
/// value's JSON type is recorded there.
struct Fields<'a> {
    keys: &'a [&'static str],
    at: usize,
    ty: Option<&'a Cell<&'static str>>,
}

impl<'de> de::Deserializer<'de> for Fields<'_> {
    type Error = Probe;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = Probe;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Probe> {
        let Some(key) = self.keys.get(self.at) else {
            return Ok(None);
        };
        seed.deserialize((*key).into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Probe> {
        let ty = if self.at == 0 { self.ty } else { None };
        self.at += 1;
        seed.deserialize(Plausible { ty })
    }
}

/// A value of whatever type is asked of it (zero, empty, false; `Some` for an option),
/// recording the JSON type asked for.
struct Plausible<'a> {
    ty: Option<&'a Cell<&'static str>>,
}

impl Plausible<'_> {
    fn is(&self, ty: &'static str) {
        if let Some(cell) = self.ty {
            cell.set(ty);
        }
    }
}

/// Nothing: an empty array or object.
struct Empty;

impl<'de> SeqAccess<'de> for Empty {
    type Error = Probe;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        _: T,
    ) -> Result<Option<T::Value>, Probe> {
        Ok(None)
    }
}

impl<'de> MapAccess<'de> for Empty {
    type Error = Probe;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, _: K) -> Result<Option<K::Value>, Probe> {
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, _: V) -> Result<V::Value, Probe> {
        Err(Probe::Other)
    }
}

impl<'de> de::Deserializer<'de> for Plausible<'_> {
    type Error = Probe;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.is("any");
        visitor.visit_unit()
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.is("boolean");
        visitor.visit_bool(false)
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.is("integer");
        visitor.visit_i64(0)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.is("integer");
        visitor.visit_u64(0)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.is("number");
        visitor.visit_f64(0.0)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.is("string");
        visitor.visit_str("")
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        visitor.visit_some(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.is("array");
        visitor.visit_seq(Empty)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Probe> {
        self.is("object");
        visitor.visit_map(Empty)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Probe> {
        self.deserialize_map(visitor)
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char bytes byte_buf unit unit_struct newtype_struct tuple tuple_struct enum
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{
        NoParams, ProjectSetParams, SetParams, StreamCompletedParams, TokenCreateParams,
    };
    use pretty_assertions::assert_eq;

    fn field(name: &'static str, ty: &'static str, required: bool) -> FieldShape {
        FieldShape {
            name,
            aliases: Vec::new(),
            ty,
            required,
        }
    }

    /// The field list of a params type is its wire names, aliases included.
    #[test]
    fn fields_are_read_from_the_type() {
        assert_eq!(
            fields_of::<StreamCompletedParams>(),
            ["run", "path", "exitCode", "exit_code", "duration"]
        );
        assert_eq!(fields_of::<NoParams>(), [] as [&str; 0]);
    }

    /// Each field's aliases, JSON type and required-ness are read from the type: an `Option`
    /// or a defaulted field is optional, a nullable one (`Option<Option<_>>`) too.
    #[test]
    fn shapes_are_read_from_the_type() {
        let exit_code = FieldShape {
            aliases: vec!["exit_code"],
            ..field("exitCode", "integer", false)
        };
        assert_eq!(
            shape_of::<StreamCompletedParams>(),
            vec![
                field("run", "string", true),
                field("path", "string", true),
                exit_code,
                field("duration", "string", false),
            ]
        );
        assert_eq!(
            shape_of::<TokenCreateParams>(),
            vec![
                field("user", "string", true),
                field("admin", "boolean", false),
                field("projects", "array", false),
                field("expiresInDays", "integer", false),
            ]
        );
        assert_eq!(
            shape_of::<ProjectSetParams>(),
            vec![
                field("name", "string", true),
                field("costCeiling", "number", false),
                field("period", "string", false),
                field("commandNetwork", "boolean", false),
                field("webDomains", "array", false),
            ]
        );
        let set = shape_of::<SetParams>();
        let attributes = set.iter().find(|f| f.name == "attributes");
        assert_eq!(attributes, Some(&field("attributes", "object", false)));
        assert_eq!(shape_of::<NoParams>(), Vec::new());
    }
}
