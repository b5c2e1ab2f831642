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
