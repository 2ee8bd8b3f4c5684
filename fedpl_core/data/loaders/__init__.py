"""The real data sets' loaders, one module a publisher's layout: NIH ChestX-ray14
(:mod:`~fedpl_core.data.loaders.nih`), CheXpert, MIMIC-CXR-JPG and any CSV
(:mod:`~fedpl_core.data.loaders.csv_loader`), HAM10000 / ISIC 2018
(:mod:`~fedpl_core.data.loaders.ham10000`), MedMNIST (:mod:`~fedpl_core.data.loaders.medmnist`),
the TB and COVID-19 radiography databases (:mod:`~fedpl_core.data.loaders.tb_covid`) and RSNA
Intracranial Hemorrhage (:mod:`~fedpl_core.data.loaders.rsna_ich`).  Each reads the files as
their publisher ships them into an :class:`~fedpl_core.data.base.ImageDataset`;
:mod:`fedpl_core.data.catalog` names which loader reads which data set."""
