//! A field's value, so that records can be compared field by field with their Python twins
//! (and, later, between the two engines after every lockstep step).

use std::collections::VecDeque;

use crate::skb::Skb;

/// The value of one field of a state record, in the shapes the Python model uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Bool(bool),
    Str(String),
    /// Python None.
    None,
    /// A Python list or tuple.
    List(Vec<Value>),
    /// An object with named fields (an skb).
    Record(Vec<(&'static str, Value)>),
}

/// Conversion of a field to its `Value`.
pub trait ToValue {
    fn to_value(&self) -> Value;
}

impl ToValue for i64 {
    fn to_value(&self) -> Value {
        Value::Int(*self)
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}

impl ToValue for (i64, i64) {
    fn to_value(&self) -> Value {
        Value::List(vec![Value::Int(self.0), Value::Int(self.1)])
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::None, ToValue::to_value)
    }
}

impl<T: ToValue> ToValue for Vec<T> {
    fn to_value(&self) -> Value {
        Value::List(self.iter().map(ToValue::to_value).collect())
    }
}

impl<T: ToValue> ToValue for VecDeque<T> {
    fn to_value(&self) -> Value {
        Value::List(self.iter().map(ToValue::to_value).collect())
    }
}

impl ToValue for Skb {
    fn to_value(&self) -> Value {
        Value::Record(vec![
            ("seq", self.seq.to_value()),
            ("end_seq", self.end_seq.to_value()),
            ("len", self.len.to_value()),
            ("truesize", self.truesize.to_value()),
            ("head", self.head.to_value()),
            ("linear", self.linear.to_value()),
            ("nfrags", self.nfrags.to_value()),
            ("head_frag", self.head_frag.to_value()),
            ("tailroom", self.tailroom.to_value()),
            ("fin", self.fin.to_value()),
            ("cloned_until", self.cloned_until.to_value()),
        ])
    }
}

/// Conversion of a `Value` back to a field (a write through a record view, fields.rs).
/// Fields that are not plain values (the queues) refuse: they change only through the
/// socket's own methods.
pub trait FromValue: Sized {
    fn from_value(v: &Value) -> Result<Self, String>;
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(i64::from(*b)),
            _ => Err(format!("expected an integer, got {v:?}")),
        }
    }
}

impl FromValue for bool {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Bool(b) => Ok(*b),
            Value::Int(i) => Ok(*i != 0),
            _ => Err(format!("expected a bool, got {v:?}")),
        }
    }
}

impl FromValue for (i64, i64) {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::List(items) if items.len() == 2 => {
                Ok((i64::from_value(&items[0])?, i64::from_value(&items[1])?))
            }
            _ => Err(format!("expected a pair of integers, got {v:?}")),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::None => Ok(None),
            _ => T::from_value(v).map(Some),
        }
    }
}

impl FromValue for Vec<(i64, i64)> {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::List(items) => items.iter().map(<(i64, i64)>::from_value).collect(),
            _ => Err(format!("expected a list of pairs, got {v:?}")),
        }
    }
}

/// The queues: read-only through a view.
macro_rules! read_only {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(_: &Value) -> Result<Self, String> {
                Err("a queue is read-only here: it changes through the socket's methods".into())
            }
        }
    )*};
}

read_only!(
    VecDeque<Skb>,
    Vec<Skb>,
    VecDeque<crate::state::RtxEntry>,
    VecDeque<i64>
);
