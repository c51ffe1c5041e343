"""The tools built on the API, one module per ``mli`` command:

* :mod:`mli.tools.cli`: the ``mli`` command itself (dispatch, exit codes);
* :mod:`mli.tools.demo`: ``mli demo``, a synthetic RNN in every kind against float;
* :mod:`mli.tools.har`: ``mli har``, MLI 1.1's HAR example run as its firmware runs it;
* :mod:`mli.tools.kws`: ``mli kws``, MLI 1.1's keyword-spotting example (WAV
  reading, FBANK features, the network on the MLI kernels, post-processor);
* :mod:`mli.tools.crosscheck`: ``mli crosscheck``, firmware dumps against the package;
* :mod:`mli.tools.export_c`: ``mli export-c``, quantized weights and tensors as C;
* :mod:`mli.tools.vectors`: ``mli vectors``, the reference-case runner (with
  :mod:`mli.tools.ovcases` for OpenVINO manifests and :mod:`mli.tools.cases`
  for the result type they share);
* :mod:`mli.tools.fixed_point`: ``mli fixed-point``, the command line of
  :func:`mli.fixed_point.to_fixed_point`.

The API modules never import this package: the API stands alone."""
