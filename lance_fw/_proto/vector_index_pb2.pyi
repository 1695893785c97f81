from google.protobuf import any_pb2 as _any_pb2
from . import index_pb2 as _index_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VectorMetricType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    L2: _ClassVar[VectorMetricType]
    Cosine: _ClassVar[VectorMetricType]
    Dot: _ClassVar[VectorMetricType]
    Hamming: _ClassVar[VectorMetricType]

class IndexType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VECTOR: _ClassVar[IndexType]

class TransformType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPQ: _ClassVar[TransformType]
L2: VectorMetricType
Cosine: VectorMetricType
Dot: VectorMetricType
Hamming: VectorMetricType
VECTOR: IndexType
OPQ: TransformType

class Tensor(_message.Message):
    __slots__ = ("data_type", "shape", "data")
    class DataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        BFLOAT16: _ClassVar[Tensor.DataType]
        FLOAT16: _ClassVar[Tensor.DataType]
        FLOAT32: _ClassVar[Tensor.DataType]
        FLOAT64: _ClassVar[Tensor.DataType]
        UINT8: _ClassVar[Tensor.DataType]
        UINT16: _ClassVar[Tensor.DataType]
        UINT32: _ClassVar[Tensor.DataType]
        UINT64: _ClassVar[Tensor.DataType]
    BFLOAT16: Tensor.DataType
    FLOAT16: Tensor.DataType
    FLOAT32: Tensor.DataType
    FLOAT64: Tensor.DataType
    UINT8: Tensor.DataType
    UINT16: Tensor.DataType
    UINT32: Tensor.DataType
    UINT64: Tensor.DataType
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    data_type: Tensor.DataType
    shape: _containers.RepeatedScalarFieldContainer[int]
    data: bytes
    def __init__(self, data_type: _Optional[_Union[Tensor.DataType, str]] = ..., shape: _Optional[_Iterable[int]] = ..., data: _Optional[bytes] = ...) -> None: ...

class IVF(_message.Message):
    __slots__ = ("centroids", "offsets", "lengths", "centroids_tensor", "loss")
    CENTROIDS_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    LENGTHS_FIELD_NUMBER: _ClassVar[int]
    CENTROIDS_TENSOR_FIELD_NUMBER: _ClassVar[int]
    LOSS_FIELD_NUMBER: _ClassVar[int]
    centroids: _containers.RepeatedScalarFieldContainer[float]
    offsets: _containers.RepeatedScalarFieldContainer[int]
    lengths: _containers.RepeatedScalarFieldContainer[int]
    centroids_tensor: Tensor
    loss: float
    def __init__(self, centroids: _Optional[_Iterable[float]] = ..., offsets: _Optional[_Iterable[int]] = ..., lengths: _Optional[_Iterable[int]] = ..., centroids_tensor: _Optional[_Union[Tensor, _Mapping]] = ..., loss: _Optional[float] = ...) -> None: ...

class PQ(_message.Message):
    __slots__ = ("num_bits", "num_sub_vectors", "dimension", "codebook", "codebook_tensor")
    NUM_BITS_FIELD_NUMBER: _ClassVar[int]
    NUM_SUB_VECTORS_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    CODEBOOK_FIELD_NUMBER: _ClassVar[int]
    CODEBOOK_TENSOR_FIELD_NUMBER: _ClassVar[int]
    num_bits: int
    num_sub_vectors: int
    dimension: int
    codebook: _containers.RepeatedScalarFieldContainer[float]
    codebook_tensor: Tensor
    def __init__(self, num_bits: _Optional[int] = ..., num_sub_vectors: _Optional[int] = ..., dimension: _Optional[int] = ..., codebook: _Optional[_Iterable[float]] = ..., codebook_tensor: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...

class HnswParameters(_message.Message):
    __slots__ = ("max_connections", "construction_ef", "max_level")
    MAX_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    CONSTRUCTION_EF_FIELD_NUMBER: _ClassVar[int]
    MAX_LEVEL_FIELD_NUMBER: _ClassVar[int]
    max_connections: int
    construction_ef: int
    max_level: int
    def __init__(self, max_connections: _Optional[int] = ..., construction_ef: _Optional[int] = ..., max_level: _Optional[int] = ...) -> None: ...

class VectorIndexDetails(_message.Message):
    __slots__ = ("metric_type", "target_partition_size", "hnsw_index_config", "pq", "sq", "rq", "runtime_hints")
    class ProductQuantization(_message.Message):
        __slots__ = ("num_bits", "num_sub_vectors")
        NUM_BITS_FIELD_NUMBER: _ClassVar[int]
        NUM_SUB_VECTORS_FIELD_NUMBER: _ClassVar[int]
        num_bits: int
        num_sub_vectors: int
        def __init__(self, num_bits: _Optional[int] = ..., num_sub_vectors: _Optional[int] = ...) -> None: ...
    class ScalarQuantization(_message.Message):
        __slots__ = ("num_bits",)
        NUM_BITS_FIELD_NUMBER: _ClassVar[int]
        num_bits: int
        def __init__(self, num_bits: _Optional[int] = ...) -> None: ...
    class RabitQuantization(_message.Message):
        __slots__ = ("num_bits", "rotation_type")
        class RotationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            FAST: _ClassVar[VectorIndexDetails.RabitQuantization.RotationType]
            MATRIX: _ClassVar[VectorIndexDetails.RabitQuantization.RotationType]
        FAST: VectorIndexDetails.RabitQuantization.RotationType
        MATRIX: VectorIndexDetails.RabitQuantization.RotationType
        NUM_BITS_FIELD_NUMBER: _ClassVar[int]
        ROTATION_TYPE_FIELD_NUMBER: _ClassVar[int]
        num_bits: int
        rotation_type: VectorIndexDetails.RabitQuantization.RotationType
        def __init__(self, num_bits: _Optional[int] = ..., rotation_type: _Optional[_Union[VectorIndexDetails.RabitQuantization.RotationType, str]] = ...) -> None: ...
    class RuntimeHintsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    METRIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    TARGET_PARTITION_SIZE_FIELD_NUMBER: _ClassVar[int]
    HNSW_INDEX_CONFIG_FIELD_NUMBER: _ClassVar[int]
    PQ_FIELD_NUMBER: _ClassVar[int]
    SQ_FIELD_NUMBER: _ClassVar[int]
    RQ_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_HINTS_FIELD_NUMBER: _ClassVar[int]
    metric_type: VectorMetricType
    target_partition_size: int
    hnsw_index_config: HnswParameters
    pq: VectorIndexDetails.ProductQuantization
    sq: VectorIndexDetails.ScalarQuantization
    rq: VectorIndexDetails.RabitQuantization
    runtime_hints: _containers.ScalarMap[str, str]
    def __init__(self, metric_type: _Optional[_Union[VectorMetricType, str]] = ..., target_partition_size: _Optional[int] = ..., hnsw_index_config: _Optional[_Union[HnswParameters, _Mapping]] = ..., pq: _Optional[_Union[VectorIndexDetails.ProductQuantization, _Mapping]] = ..., sq: _Optional[_Union[VectorIndexDetails.ScalarQuantization, _Mapping]] = ..., rq: _Optional[_Union[VectorIndexDetails.RabitQuantization, _Mapping]] = ..., runtime_hints: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Index(_message.Message):
    __slots__ = ("name", "columns", "dataset_version", "index_type", "vector_index")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    DATASET_VERSION_FIELD_NUMBER: _ClassVar[int]
    INDEX_TYPE_FIELD_NUMBER: _ClassVar[int]
    VECTOR_INDEX_FIELD_NUMBER: _ClassVar[int]
    name: str
    columns: _containers.RepeatedScalarFieldContainer[str]
    dataset_version: int
    index_type: IndexType
    vector_index: VectorIndex
    def __init__(self, name: _Optional[str] = ..., columns: _Optional[_Iterable[str]] = ..., dataset_version: _Optional[int] = ..., index_type: _Optional[_Union[IndexType, str]] = ..., vector_index: _Optional[_Union[VectorIndex, _Mapping]] = ...) -> None: ...

class Transform(_message.Message):
    __slots__ = ("position", "shape", "type")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    position: int
    shape: _containers.RepeatedScalarFieldContainer[int]
    type: TransformType
    def __init__(self, position: _Optional[int] = ..., shape: _Optional[_Iterable[int]] = ..., type: _Optional[_Union[TransformType, str]] = ...) -> None: ...

class Flat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DiskAnn(_message.Message):
    __slots__ = ("spec", "filename", "r", "alpha", "L", "entries")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    R_FIELD_NUMBER: _ClassVar[int]
    ALPHA_FIELD_NUMBER: _ClassVar[int]
    L_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    spec: int
    filename: str
    r: int
    alpha: float
    L: int
    entries: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, spec: _Optional[int] = ..., filename: _Optional[str] = ..., r: _Optional[int] = ..., alpha: _Optional[float] = ..., L: _Optional[int] = ..., entries: _Optional[_Iterable[int]] = ...) -> None: ...

class VectorIndexStage(_message.Message):
    __slots__ = ("flat", "ivf", "pq", "transform", "diskann")
    FLAT_FIELD_NUMBER: _ClassVar[int]
    IVF_FIELD_NUMBER: _ClassVar[int]
    PQ_FIELD_NUMBER: _ClassVar[int]
    TRANSFORM_FIELD_NUMBER: _ClassVar[int]
    DISKANN_FIELD_NUMBER: _ClassVar[int]
    flat: Flat
    ivf: IVF
    pq: PQ
    transform: Transform
    diskann: DiskAnn
    def __init__(self, flat: _Optional[_Union[Flat, _Mapping]] = ..., ivf: _Optional[_Union[IVF, _Mapping]] = ..., pq: _Optional[_Union[PQ, _Mapping]] = ..., transform: _Optional[_Union[Transform, _Mapping]] = ..., diskann: _Optional[_Union[DiskAnn, _Mapping]] = ...) -> None: ...

class VectorIndex(_message.Message):
    __slots__ = ("spec_version", "dimension", "stages", "metric_type")
    SPEC_VERSION_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    METRIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    spec_version: int
    dimension: int
    stages: _containers.RepeatedCompositeFieldContainer[VectorIndexStage]
    metric_type: VectorMetricType
    def __init__(self, spec_version: _Optional[int] = ..., dimension: _Optional[int] = ..., stages: _Optional[_Iterable[_Union[VectorIndexStage, _Mapping]]] = ..., metric_type: _Optional[_Union[VectorMetricType, str]] = ...) -> None: ...

class JsonIndexDetails(_message.Message):
    __slots__ = ("path", "target_details")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TARGET_DETAILS_FIELD_NUMBER: _ClassVar[int]
    path: str
    target_details: _any_pb2.Any
    def __init__(self, path: _Optional[str] = ..., target_details: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class BloomFilterIndexDetails(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RTreeIndexDetails(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FMIndexDetails(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MinHashLshIndexDetails(_message.Message):
    __slots__ = ("num_hashes", "num_bands", "shingle_size", "tokenizer", "signature_version")
    NUM_HASHES_FIELD_NUMBER: _ClassVar[int]
    NUM_BANDS_FIELD_NUMBER: _ClassVar[int]
    SHINGLE_SIZE_FIELD_NUMBER: _ClassVar[int]
    TOKENIZER_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_VERSION_FIELD_NUMBER: _ClassVar[int]
    num_hashes: int
    num_bands: int
    shingle_size: int
    tokenizer: _index_pb2.InvertedIndexDetails
    signature_version: int
    def __init__(self, num_hashes: _Optional[int] = ..., num_bands: _Optional[int] = ..., shingle_size: _Optional[int] = ..., tokenizer: _Optional[_Union[_index_pb2.InvertedIndexDetails, _Mapping]] = ..., signature_version: _Optional[int] = ...) -> None: ...
