"""File format 2.1/2.2 encodings (``lance.encodings21``).

So far: the compressive-encoding decoders (``compressive``, ``fastlanes``, ``fsst``), verified
against pylance 14 bytes. The structural layouts (mini-block, full-zip, constant) and the hook
implementations that let the reader use them come next; until then 2.1/2.2 files are refused
with a clear ``UnsupportedFeatureError``.
"""
