"""MLI 1.1's keyword-spotting example (``examples/example_kws_speech``),
run as its firmware runs it: ``mli kws``.

Every 240 samples (15 ms) of a 16 kHz mono WAV file the example computes 13
log mel filter-bank features from the last 480 samples; every 16 feature
vectors it runs a network (3x3 convolution, three depthwise-separable
blocks, leaky ReLU, average pooling, LSTM, fully connected, softmax) on the
last 65 and a post-processor turns the class probabilities into one printed
line per detected keyword.

* :mod:`~mli.tools.kws.wav`: WAV reading (:func:`read_wav`);
* :mod:`~mli.tools.kws.features`: the FBANK extractor in float32 numpy and
  the fx8 conversion (:class:`FbankExtractor`, :func:`to_fx8`);
* :mod:`~mli.tools.kws.stream`: the streaming schedule and the features of
  a whole file (:func:`features_of_wav`);
* :mod:`~mli.tools.kws.data`: the data folder and the quantized model
  (:func:`load_model`);
* :mod:`~mli.tools.kws.network`: one inference on the MLI 1.1 kernels
  (:func:`run_network`);
* :mod:`~mli.tools.kws.post`: the post-processor and the printed lines
  (:class:`PostProcessor`, :func:`detections`);
* :mod:`~mli.tools.kws.cli`: the command.

The data (``model.json``, ``quantized.npz``, ``test.wav``) are read where
they are (``--data``, ``$MLI_KWS_DATA``, ``$MLI_SHARED/data/kws`` or
``<project>/../shared/data/kws``); nothing is copied into the package.
"""
from .cli import main
from .data import KwsModel, default_data_dir, load_model
from .features import FbankExtractor, to_fx8
from .network import LAYER_OUTPUTS, missing_kernels, run_network
from .post import CLASSES, PostProcessor, detections, format_detection, probabilities
from .stream import FeatureStream, features_of_samples, features_of_wav, timestamps
from .wav import WavError, read_wav

__all__ = ["main", "KwsModel", "default_data_dir", "load_model", "FbankExtractor", "to_fx8", "LAYER_OUTPUTS",
           "missing_kernels", "run_network", "CLASSES", "PostProcessor", "detections", "format_detection",
           "probabilities", "FeatureStream", "features_of_samples", "features_of_wav", "timestamps", "WavError",
           "read_wav"]
