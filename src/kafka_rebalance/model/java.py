"""The few Java semantics Kafka's behaviour depends on (string order and String.hashCode)."""


def java_sort_key(text: str) -> bytes:
    """Key that orders strings like Java's String.compareTo (UTF-16 code units, not code points)."""
    return text.encode("utf-16-be", "surrogatepass")


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: h = 31*h + c over UTF-16 code units, wrapped to a signed int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h
