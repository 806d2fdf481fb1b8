//! Maps (field to value) kept in this process.

use std::collections::{BTreeMap, HashMap};

use crate::MapPut;

/// Every map by name; an emptied map is removed, as Redis does.
#[derive(Default)]
pub(super) struct Maps {
    maps: HashMap<String, BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl Maps {
    pub(super) fn put(
        &mut self,
        map: &str,
        entries: &[(Vec<u8>, Vec<u8>)],
        max_entries: u64,
        keep_existing: bool,
    ) -> MapPut {
        let current = self.maps.get(map);
        let len = current.map_or(0, BTreeMap::len);
        // A field named twice in `entries` is added once.
        let mut new_fields: Vec<&Vec<u8>> = entries
            .iter()
            .map(|(field, _)| field)
            .filter(|field| current.is_none_or(|fields| !fields.contains_key(*field)))
            .collect();
        new_fields.sort_unstable();
        new_fields.dedup();
        let added = new_fields.len() as u64;
        if len as u64 + added > max_entries {
            return MapPut::Full { len: len as u64 };
        }
        if entries.is_empty() {
            return MapPut::Stored { added: 0 };
        }
        let fields = self.maps.entry(map.to_owned()).or_default();
        for (field, value) in entries {
            if keep_existing && fields.contains_key(field) {
                continue;
            }
            fields.insert(field.clone(), value.clone());
        }
        MapPut::Stored { added }
    }

    pub(super) fn get(&self, map: &str, field: &[u8]) -> Option<Vec<u8>> {
        self.maps.get(map)?.get(field).cloned()
    }

    pub(super) fn take(&mut self, map: &str, field: &[u8]) -> Option<Vec<u8>> {
        let fields = self.maps.get_mut(map)?;
        let value = fields.remove(field);
        if fields.is_empty() {
            self.maps.remove(map);
        }
        value
    }

    pub(super) fn len(&self, map: &str) -> u64 {
        self.maps.get(map).map_or(0, |fields| fields.len() as u64)
    }

    pub(super) fn fields(&self, map: &str) -> Vec<Vec<u8>> {
        self.maps
            .get(map)
            .map(|fields| fields.keys().cloned().collect())
            .unwrap_or_default()
    }

    pub(super) fn entries(&self, map: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.maps
            .get(map)
            .map(|fields| fields.iter().map(|(f, v)| (f.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    pub(super) fn delete(&mut self, map: &str) -> bool {
        self.maps.remove(map).is_some()
    }
}
